"""A wrong operator: add subtracts."""

FILES = {
    "calc.py": (
        "def add(a, b):\n"
        "    return a - b\n"
        "\n"
        "\n"
        "def sub(a, b):\n"
        "    return a - b\n"
        "\n"
        "\n"
        "def mul(a, b):\n"
        "    return a * b\n"
    ),
    "test_calc.py": (
        "from calc import add, mul, sub\n"
        "\n"
        "assert add(2, 3) == 5, add(2, 3)\n"
        "assert sub(5, 3) == 2\n"
        "assert mul(2, 3) == 6\n"
        "print('ok')\n"
    ),
}
KEEP = {"calc.py": ["def add(a, b):", "def sub(a, b):", "def mul(a, b):"]}
# What a fix looks like (tests/test_bench_tasks.py: the objective check passes on it).
SOLUTION = {"calc.py": FILES["calc.py"].replace("return a - b", "return a + b", 1)}
