"""The documentation builds and its links hold: the site under docs/ (mkdocs.yml) is built as a reader or
a release would build it, with `mkdocs build --strict`, so a broken link, a missing anchor or a page left
out of the navigation fails here instead of on someone's screen; and the README, which GitHub shows without
building anything, links only to docs files that exist."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
#: a Markdown link or image whose target is under docs/: [text](docs/page.md#anchor), ![alt](docs/images/x.png)
DOCS_LINK = re.compile(r"\]\((docs/[^)#\s]+)(?:#([^)\s]+))?\)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built once for this module's tests, outside the work tree (--site-dir), so a test run
    leaves no site/ folder behind to be committed by mistake."""
    out = tmp_path_factory.mktemp("site")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"mkdocs build --strict failed:\n{r.stdout}{r.stderr}"
    return out


def nav_pages(nav: list) -> list[str]:
    """Every page path in mkdocs.yml's nav, however deep its sections nest."""
    pages: list[str] = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += nav_pages(value) if isinstance(value, list) else [value]
    return pages


def built_page(site: Path, page: str) -> Path:
    """Where mkdocs writes a docs page with its default directory URLs: index.md → index.html,
    window.md → window/index.html, development/tests.md → development/tests/index.html."""
    stem = page.removesuffix(".md")
    return site / "index.html" if stem == "index" else site / stem / "index.html"


def test_the_site_builds_with_strict_checks(site: Path) -> None:
    """--strict turns every warning into a failure, and mkdocs.yml raises to warnings what mkdocs only
    reports by default (an omitted page, a missing anchor, a link outside docs/): the fixture's build
    passing means none of those is left. Beyond that, the pages a reader lands on were written, and the
    screenshot they show was copied: images live under docs/ precisely so the site can carry them."""
    for page in ("index.md", "getting-started.md", "development/architecture.md"):
        assert built_page(site, page).is_file(), page
    assert (site / "images" / "screenshot.png").is_file()
    assert 'src="images/screenshot.png"' in built_page(site, "index.md").read_text(encoding="utf-8")


def test_the_built_pages_load_nothing_from_the_network(site: Path) -> None:
    """The docs are read offline too (on a server, on a train): the theme would load highlight.js from a
    CDN unless mkdocs.yml turns it off, so no page may reference a script or stylesheet off the machine."""
    external = re.compile(r"<(?:script|link)\b[^>]*(?:src|href)=\"https?://")
    offenders = [str(p.relative_to(site)) for p in site.rglob("*.html")
                 if external.search(p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_every_page_in_the_nav_exists() -> None:
    """A nav entry for a page that was renamed or never written is a dead link in every page's sidebar;
    checked directly, without a build, so the message names the entry."""
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = nav_pages(config["nav"])
    assert "index.md" in pages and len(pages) == len(set(pages))
    assert [p for p in pages if not (DOCS / p).is_file()] == []


def test_the_readme_links_to_docs_files_that_exist(site: Path) -> None:
    """GitHub renders README.md as it is, so its relative links (docs/window.md, docs/images/screenshot.png)
    must name files that exist, and an #anchor one the built page has. mkdocs never sees the README, so
    --strict cannot catch these."""
    links = DOCS_LINK.findall((REPO / "README.md").read_text(encoding="utf-8"))
    assert len(links) >= 10  # the README's page list: a regex that matched nothing would pass vacuously
    assert [path for path, _ in links if not (REPO / path).is_file()] == []
    for path, anchor in links:
        if anchor:
            page = built_page(site, path.removeprefix("docs/"))
            assert f'id="{anchor}"' in page.read_text(encoding="utf-8"), f"{path}#{anchor}"


def test_the_headless_pages_example_row_lists_every_built_in_example() -> None:
    """docs/headless.md's `--example` row names the examples the code has (experiment/loading.builtin_examples,
    the examples' folder), as the option's --help does: one added there and not here fails."""
    from training_core.cli.options import example_names
    from training_core.experiment.loading import builtin_examples
    row = next(line for line in (DOCS / "headless.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| `--example NAME` |"))
    assert sorted(re.findall(r"`([a-z0-9_]+)`", row.split("|")[2])) == sorted(builtin_examples())
    assert sorted(n.removesuffix(" (default)") for n in example_names().split(", ")) == sorted(builtin_examples())
