"""A question answered into a file (the answer is in the code; the check knows it only by its hash)."""

FILES = {
    "server.py": (
        "import os\n"
        "\n"
        "DEFAULT_HOST = \"127.0.0.1\"\n"
        "DEFAULT_PORT = 8731\n"
        "\n"
        "\n"
        "def address():\n"
        "    port = int(os.environ.get(\"APP_PORT\", DEFAULT_PORT))\n"
        "    return DEFAULT_HOST, port\n"
    ),
    "check_answer.py": (
        "import hashlib\n"
        "\n"
        "text = open(\"answer.txt\").read().strip()\n"
        "digest = hashlib.sha256(text.encode()).hexdigest()\n"
        "assert digest == \"0bf85f8f318b0aced9fcb833275ada48bcd5c55128fced65553a76a5a95b01a2\", \\\n"
        "    \"answer.txt does not hold the right number\"\n"
        "print('ok')\n"
    ),
}
ANSWER = "8731"
KEEP = {"server.py": ["DEFAULT_PORT = 8731"]}
# What a fix looks like (tests/test_bench_tasks.py: the objective check passes on it).
SOLUTION = {"answer.txt": ANSWER + "\n"}
