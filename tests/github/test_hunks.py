"""runner/github/hunks.py: the RIGHT-side lines of each hunk of a pull request file's `patch`, where an inline
review comment may sit (issue 32)."""

from __future__ import annotations

from runner.github.hunks import diff_lines, hunk_of, right_ranges

PATCH = """@@ -10,3 +10,4 @@ def fetch(url):
     session = Session()
-    retries = 1
+    retries = 3
+    backoff = 2
     return session.get(url)
@@ -40,3 +41,2 @@ def close():
     a = 1
-    b = 2
     c = 3"""


def test_each_hunk_spans_its_added_and_context_lines_numbered_from_the_plus_side():
    assert right_ranges(PATCH) == [(10, 13), (41, 42)]


def test_a_new_file_a_deletion_only_hunk_and_a_header_without_counts():
    assert right_ranges("@@ -0,0 +1,3 @@\n+a\n+b\n+c") == [(1, 3)]
    assert right_ranges("@@ -5,2 +4,0 @@\n-a\n-b") == []  # only deletes: no RIGHT line to comment on
    assert right_ranges("@@ -1 +1 @@\n-a\n+b") == [(1, 1)]  # a count left out is 1


def test_no_newline_markers_and_stripped_context_lines():
    patch = "@@ -1,3 +1,3 @@\n a\n\n-c\n\\ No newline at end of file\n+c\n\\ No newline at end of file"
    assert right_ranges(patch) == [(1, 3)]  # the empty line is a context line whose space was stripped


def test_a_patch_cut_short_offers_only_the_lines_it_shows():
    assert right_ranges("@@ -1,2 +1,50 @@\n+a\n+b\n+c") == [(1, 3)]
    assert right_ranges("@@ -1,1 +1,2 @@\n+a\n+b\n+c\n+d") == [(1, 2)]  # never past the header's count


def test_crlf_and_text_before_the_first_hunk_are_ignored():
    assert right_ranges("Binary files differ\r\n@@ -3,2 +3,2 @@\r\n x\r\n-y\r\n+z\r\n") == [(3, 4)]
    assert right_ranges("") == []


def test_lines_must_all_be_in_one_hunk():
    ranges = right_ranges(PATCH)
    assert hunk_of(ranges, 11, 13) == (10, 13)
    assert hunk_of(ranges, 41, 41) == (41, 42)
    assert hunk_of(ranges, 13, 41) is None  # both ends on the diff, but in two hunks
    assert hunk_of(ranges, 14, 14) is None and hunk_of(ranges, 9, 10) is None


def test_files_without_a_patch_offer_nothing():
    files = [{"filename": "a.py", "patch": "@@ -1 +1 @@\n-x\n+y"}, {"filename": "logo.png", "status": "modified"},
             {"filename": "huge.json", "patch": None}]
    assert diff_lines(files) == {"a.py": [(1, 1)]}
