"""A missing function the tests call."""

FILES = {
    "textutil.py": (
        "def shout(text):\n"
        "    return text.upper() + \"!\"\n"
        "\n"
        "\n"
        "def words(text):\n"
        "    return text.split()\n"
    ),
    "test_textutil.py": (
        "from textutil import shout, slugify, words\n"
        "\n"
        "assert slugify(\"Hello World\") == \"hello-world\", slugify(\"Hello World\")\n"
        "assert slugify(\"  Agent  Run \") == \"agent-run\"\n"
        "assert shout(\"hi\") == \"HI!\"\n"
        "assert words(\"a b\") == [\"a\", \"b\"]\n"
        "print('ok')\n"
    ),
}
KEEP = {"textutil.py": ["def shout(text):", "def words(text):"]}
# What a fix looks like (tests/test_bench_tasks.py: the objective check passes on it).
SOLUTION = {"textutil.py": FILES["textutil.py"]
            + "\n\ndef slugify(text):\n    return \"-\".join(text.lower().split())\n"}
