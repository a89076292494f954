"""Hub ids and their revisions (lookbench.hub): ``owner/name@rev`` names a branch, a tag or a commit, never a path
(issue 37 item 3), and a snapshot's commit is its folder's name only where huggingface_hub's cache puts snapshots."""
from __future__ import annotations

import pytest

from lookbench.hub import looks_like_hub_id, snapshot_commit, split_revision

SHA = "a8057f8aadaaab91670ad37949f6e1b5aa187e29"


@pytest.mark.parametrize("revision", ["main", "v1.0", "v2.1-rc1", "release_2025", SHA, SHA[:7], "refs/pr/1",
                                      "feature/x", "fix/issue-37", "dev/alice/try.2", "r\u00e9sum\u00e9"])
def test_branches_tags_commits_and_git_style_slashed_names_are_revisions(revision):
    assert looks_like_hub_id(f"owner/name@{revision}")
    assert split_revision(f"owner/name@{revision}") == ("owner/name", revision)


@pytest.mark.parametrize("revision, problem", [
    ("/some/folder", "starts with '/'"),
    ("/etc/passwd", "starts with '/'"),
    ("../../x", "'..'"),
    ("a/../b", "'..'"),
    ("a..b", "'..'"),
    ("feature/", "ends with '/'"),
    ("a//b", "'//'"),
    ("a\\b", "backslash"),
    ("..\\x", "'..'"),
    ("./x", "segment starting with '.'"),
    ("a/.hidden", "segment starting with '.'"),
    (".", "segment starting with '.'"),
    ("main.lock", "'.lock'"),
    ("a/b.lock/c", "'.lock'"),
    ("main.", "ends with '.'"),
    ("ma in", "whitespace or a control character"),
    ("main\n", "whitespace or a control character"),
    ("ma\tin", "whitespace or a control character"),
    ("a\x00b", "whitespace or a control character"),
    ("a\x7fb", "whitespace or a control character"),
    ("a\u00a0b", "whitespace or a control character"),
    ("C:x", "':'"),
    ("a~1", "'~'"),
    ("a^2", "'^'"),
    ("a?", "'?'"),
    ("a*", "'*'"),
    ("a[1]", "'['"),
    ("a@{1}", "'@{'"),
    ("@", "'@'"),
    ("main@v2", "'@'"),
])
def test_a_revision_that_is_a_path_or_not_a_git_ref_is_refused_in_one_line(revision, problem):
    """A revision reaches huggingface_hub as ``refs/<revision>`` inside its cache: ``/x`` or ``a/../b`` would read a
    file outside it (issue 37: ``--data owner/name@/some/folder``)."""
    with pytest.raises(ValueError) as caught:
        split_revision(f"owner/name@{revision}")
    message = str(caught.value)
    assert "\n" not in message and problem in message and "owner/name" in message
    assert "a branch, a tag or a commit sha" in message


def test_nothing_after_the_at_sign_is_refused():
    with pytest.raises(ValueError, match="nothing after '@'"):
        split_revision("owner/name@")


@pytest.mark.parametrize("name", ["owner/name", "owner/name@main", "Org-1/model_v2.5@refs/pr/3", "owner/name@/some/folder"])
def test_hub_ids(name):
    """What is meant as a Hub id; its revision is then ``split_revision``'s to accept or refuse, saying why."""
    assert looks_like_hub_id(name)


@pytest.mark.parametrize("name", ["name", "a/b/c", "../b", "a/..", "/abs/path", "a b/c", "./a@main", "a/b c@main"])
def test_not_hub_ids(name):
    assert not looks_like_hub_id(name)


def test_a_snapshot_commit_is_the_folder_name_only_inside_a_hub_cache(tmp_path):
    storage = tmp_path / "hub" / "datasets--owner--name"
    assert snapshot_commit(storage / "snapshots" / SHA) == SHA
    for folder in (tmp_path / "elsewhere" / "lookbench", tmp_path / "snapshots" / "lookbench", storage / "snapshots" / SHA[:12],
                   tmp_path / "some" / "snapshots" / SHA):
        with pytest.raises(ValueError, match="not a snapshot of the Hugging Face cache"):
            snapshot_commit(folder)
