"""One value in a JSON config, the rest kept."""

FILES = {
    "config.json": (
        "{\n"
        "  \"name\": \"worker\",\n"
        "  \"retries\": 3,\n"
        "  \"timeout_s\": 30,\n"
        "  \"queues\": [\"high\", \"low\"],\n"
        "  \"debug\": false\n"
        "}\n"
    ),
    "check_config.py": (
        "import json\n"
        "\n"
        "config = json.load(open(\"config.json\"))\n"
        "assert config[\"retries\"] == 5, f\"retries is {config['retries']}\"\n"
        "assert config == {\"name\": \"worker\", \"retries\": 5, \"timeout_s\": 30, \"queues\": [\"high\", \"low\"],\n"
        "                  \"debug\": False}, \"other settings changed\"\n"
        "print('ok')\n"
    ),
}
KEEP = {"config.json": ["\"queues\""]}
# What a fix looks like (tests/test_bench_tasks.py: the objective check passes on it).
SOLUTION = {"config.json": FILES["config.json"].replace('"retries": 3', '"retries": 5')}
