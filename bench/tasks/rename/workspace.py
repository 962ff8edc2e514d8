"""A rename across call sites (three files)."""

FILES = {
    "users.py": (
        "USERS = {1: \"ada\", 2: \"grace\"}\n"
        "\n"
        "\n"
        "def get_usr(user_id):\n"
        "    return USERS.get(user_id)\n"
    ),
    "report.py": (
        "from users import get_usr\n"
        "\n"
        "\n"
        "def line(user_id):\n"
        "    return f\"user {user_id}: {get_usr(user_id)}\"\n"
    ),
    "admin.py": (
        "import users\n"
        "\n"
        "\n"
        "def is_admin(user_id):\n"
        "    return users.get_usr(user_id) == \"ada\"\n"
    ),
    "test_users.py": (
        "import pathlib\n"
        "\n"
        "from admin import is_admin\n"
        "from report import line\n"
        "from users import get_user\n"
        "\n"
        "assert get_user(2) == \"grace\"\n"
        "assert line(1) == \"user 1: ada\" and is_admin(1)\n"
        "old = \"get\" + \"_usr\"\n"
        "left = [p.name for p in pathlib.Path(\".\").glob(\"*.py\") if old in p.read_text()]\n"
        "assert left == [], f\"{old} is still used in {left}\"\n"
        "print('ok')\n"
    ),
}
KEEP = {"users.py": ["USERS = {1:"], "report.py": ["def line(user_id):"], "admin.py": ["def is_admin(user_id):"]}
# What a fix looks like (tests/test_bench_tasks.py: the objective check passes on it).
SOLUTION = {path: FILES[path].replace("get_usr", "get_user") for path in ("users.py", "report.py", "admin.py")}
