"""A version bump in two files."""

FILES = {
    "pyproject.toml": (
        "[project]\n"
        "name = \"mypkg\"\n"
        "version = \"1.4.2\"\n"
        "description = \"A small package\"\n"
        "requires-python = \">=3.9\"\n"
        "dependencies = [\"requests>=2\"]\n"
        "\n"
        "[build-system]\n"
        "requires = [\"setuptools\"]\n"
        "build-backend = \"setuptools.build_meta\"\n"
    ),
    "mypkg/__init__.py": (
        "\"\"\"mypkg: a small package.\"\"\"\n"
        "\n"
        "__version__ = \"1.4.2\"\n"
        "\n"
        "\n"
        "def hello():\n"
        "    return \"hello\"\n"
    ),
    "check_version.py": (
        "import re\n"
        "\n"
        "toml = open(\"pyproject.toml\").read()\n"
        "init = open(\"mypkg/__init__.py\").read()\n"
        "assert re.search(r'^version = \"1\\.5\\.0\"$', toml, re.M), \"pyproject.toml: version is not 1.5.0\"\n"
        "assert re.search(r'^__version__ = \"1\\.5\\.0\"$', init, re.M), \"mypkg/__init__.py: not 1.5.0\"\n"
        "print('ok')\n"
    ),
}
KEEP = {"pyproject.toml": ["name = \"mypkg\"", "[build-system]", "dependencies = [\"requests>=2\"]"],
        "mypkg/__init__.py": ["def hello():"]}
# What a fix looks like (tests/test_bench_tasks.py: the objective check passes on it).
SOLUTION = {path: FILES[path].replace("1.4.2", "1.5.0") for path in ("pyproject.toml", "mypkg/__init__.py")}
