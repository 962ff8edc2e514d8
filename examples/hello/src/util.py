import re


def slugify(text: str) -> str:
    # TODO: transliterate non-ASCII letters instead of dropping them
    text = re.sub(r"[^a-zA-Z0-9]+", "-", text)
    return text.strip("-").lower()
