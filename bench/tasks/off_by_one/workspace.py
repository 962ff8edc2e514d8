"""An off-by-one: the loop starts at 1."""

FILES = {
    "stats.py": (
        "def total(numbers):\n"
        "    \"\"\"The sum of numbers.\"\"\"\n"
        "    result = 0\n"
        "    for i in range(1, len(numbers)):\n"
        "        result += numbers[i]\n"
        "    return result\n"
        "\n"
        "\n"
        "def mean(numbers):\n"
        "    return total(numbers) / len(numbers)\n"
    ),
    "test_stats.py": (
        "from stats import mean, total\n"
        "\n"
        "assert total([1, 2, 3]) == 6, total([1, 2, 3])\n"
        "assert total([5]) == 5\n"
        "assert mean([2, 4]) == 3\n"
        "print('ok')\n"
    ),
}
# Besides the check: the functions are still there (a file rewritten to pass the test alone is not the fix).
KEEP = {"stats.py": ["def total(numbers):", "def mean(numbers):"]}
# What a fix looks like (tests/test_bench_tasks.py: the objective check passes on it).
SOLUTION = {"stats.py": FILES["stats.py"].replace("range(1, len(numbers))", "range(len(numbers))")}
