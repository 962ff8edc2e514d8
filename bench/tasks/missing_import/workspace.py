"""A missing import."""

FILES = {
    "geometry.py": (
        "def circle_area(radius):\n"
        "    return math.pi * radius ** 2\n"
        "\n"
        "\n"
        "def hypotenuse(a, b):\n"
        "    return math.sqrt(a * a + b * b)\n"
    ),
    "test_geometry.py": (
        "from geometry import circle_area, hypotenuse\n"
        "\n"
        "assert abs(circle_area(1) - 3.14159) < 1e-3\n"
        "assert hypotenuse(3, 4) == 5\n"
        "print('ok')\n"
    ),
}
KEEP = {"geometry.py": ["def circle_area(radius):", "def hypotenuse(a, b):"]}
# What a fix looks like (tests/test_bench_tasks.py: the objective check passes on it).
SOLUTION = {"geometry.py": "import math\n\n\n" + FILES["geometry.py"]}
