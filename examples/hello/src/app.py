"""A tiny app for the agent-run demo."""

from src.util import slugify


def main(title: str) -> str:
    # TODO: validate the title length before slugifying
    return slugify(title)


if __name__ == "__main__":
    print(main("Hello, agent-run"))
