"""The match service over HTTP, started in the test on 127.0.0.1: it answers a page with the line
``websim match`` prints, bounds requests, asks for its token, refuses to listen beyond loopback
without one, and adds references without a restart."""

from __future__ import annotations

import asyncio
import base64
import http.client
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support.imitations import imitate
from support.match_service import multipart, request, running_service
from support.warc_archives import write_warc

from websim_crawler.cli import main
from websim_crawler.cli import serve as serve_command
from websim_crawler.config import ServiceParams, WebsimConfig
from websim_crawler.core.reference_index import ReferenceIndex
from websim_crawler.errors import ConfigError

pytest.importorskip("starlette", reason="needs the serve extra (starlette, uvicorn)")

SITE = Path(__file__).resolve().parents[1] / "support" / "site"
PAGES = ("about.html", "help.html", "index.html", "post.html", "results.html")


def websim(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "websim_crawler", *arguments, "-s", "WEBSIM_ANALYSIS_WORKERS=1"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def png(colour: tuple[int, int, int]) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (64, 48), colour).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of five pages (one with its screenshot) and a suspicious copy of one."""
    root = tmp_path_factory.mktemp("service")
    (root / "protected").mkdir()
    for name in PAGES:
        (root / "protected" / name).write_bytes((SITE / name).read_bytes())
    (root / "protected" / "help.png").write_bytes(png((200, 30, 30)))
    finished = websim("index", "protected", "-o", "refs.idx", cwd=root)
    assert finished.returncode == 0, finished.stderr
    copy = imitate((SITE / "help.html").read_bytes(), "http://127.0.0.1/help.html", seed=3)
    for sub in ("shot", "bare"):
        (root / sub).mkdir()
        (root / sub / "suspicious.html").write_text(copy.html, encoding="utf-8")
    (root / "shot" / "suspicious.png").write_bytes(png((190, 40, 30)))
    return root


def cli_line(folder: Path, page: str) -> dict[str, Any]:
    finished = websim("match", page, "--index", "refs.idx", "--top", "3", cwd=folder)
    assert finished.returncode == 0, finished.stderr
    [line] = finished.stdout.splitlines()
    return dict(json.loads(line))


def config(folder: Path, **settings: str) -> WebsimConfig:
    return WebsimConfig.from_settings(
        {"WEBSIM_MATCH_INDEX": str(folder / "refs.idx"), "WEBSIM_ANALYSIS_WORKERS": "1", **settings}
    )


@pytest.fixture(scope="module")
def service(folder: Path) -> Iterator[str]:
    with running_service(config(folder)) as url:
        yield url


@pytest.mark.slow
def test_a_posted_page_gets_the_line_websim_match_prints(folder: Path, service: str) -> None:
    bare, shot = folder / "bare" / "suspicious.html", folder / "shot" / "suspicious.html"
    expected_bare = cli_line(folder, "bare/suspicious.html")
    expected_shot = cli_line(folder, "shot/suspicious.html")
    assert expected_bare["matches"][0]["url"].endswith("/protected/help.html")
    assert expected_shot["matches"][0]["stages"]["visual"] is not None
    # The raw HTML as the body, the URL and top in the query string.
    status, line = request(
        f"{service}/match?top=3&url={bare.as_uri()}",
        bare.read_bytes(),
        {"Content-Type": "text/html"},
    )
    assert status == 200 and line == expected_bare
    # The page and its screenshot as form files.
    body, content_type = multipart(
        {"url": shot.as_uri(), "top": "3"},
        {
            "page": ("suspicious.html", shot.read_bytes()),
            "screenshot": ("suspicious.png", (folder / "shot" / "suspicious.png").read_bytes()),
        },
    )
    status, line = request(f"{service}/match", body, {"Content-Type": content_type})
    assert status == 200 and line == expected_shot
    # JSON, the files in base64.
    data = {
        "page_base64": base64.b64encode(shot.read_bytes()).decode(),
        "screenshot_base64": base64.b64encode(
            (folder / "shot" / "suspicious.png").read_bytes()
        ).decode(),
        "url": shot.as_uri(),
        "top": 3,
    }
    status, line = request(
        f"{service}/match", json.dumps(data).encode(), {"Content-Type": "application/json"}
    )
    assert status == 200 and line == expected_shot


def test_a_warc_record_is_answered_as_its_page(folder: Path, service: str, tmp_path: Path) -> None:
    html = (folder / "bare" / "suspicious.html").read_bytes()
    url = "http://phish.example/login"
    warc = write_warc(
        tmp_path / "page.warc.gz",
        [(url, html, [("Content-Type", "text/html")], "200 OK")],
        with_requests=True,
    )
    status, from_warc = request(f"{service}/match?top=3", warc.read_bytes())
    assert status == 200, from_warc
    status, from_html = request(f"{service}/match?top=3&url={url}", html)
    assert from_warc == from_html and from_warc["url"] == url
    assert from_warc["matches"][0]["url"].endswith("/protected/help.html")


def test_oversized_requests_and_pages_are_refused_with_413(folder: Path) -> None:
    with running_service(config(folder, WEBSIM_MAX_PAGE_BYTES="100000")) as service:
        page = b"<html><body>" + b"<p>word</p>" * 11_000 + b"</body></html>"  # 121 kB
        status, answer = request(f"{service}/match", page)
        assert (status, answer["error"]) == (413, "too_large")  # the page, in a small request
        status, answer = request(f"{service}/match", page * 3)
        assert (status, answer["error"]) == (413, "too_large")  # the request, by its length
        host, port = service.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        chunks = iter([b"<html><body>" + b"x" * 65_536] * 8)  # no length: counted as read
        connection.request("POST", "/match", body=chunks, encode_chunked=True)
        answer = connection.getresponse()
        assert answer.status == 413
        assert json.loads(answer.read())["error"] == "too_large"
        connection.close()
        status, answer = request(f"{service}/health")
        assert status == 200  # and it goes on answering


def test_a_token_is_asked_on_every_request_when_set(folder: Path) -> None:
    with running_service(config(folder, WEBSIM_SERVE_TOKEN="s3cret")) as service:
        page = (SITE / "help.html").read_bytes()
        for path, body in (("/health", None), ("/", None), ("/match", page)):
            assert request(f"{service}{path}", body)[0] == 401
            wrong = {"Authorization": "Bearer s3cre"}
            assert request(f"{service}{path}", body, wrong)[0] == 401
        answer = request(f"{service}/match", page, {"Authorization": "Bearer s3cret"})
        assert answer[0] == 200, answer
        basic = base64.b64encode(b"anyone:s3cret").decode()  # a browser after its prompt
        assert request(f"{service}/health", None, {"Authorization": f"Basic {basic}"})[0] == 200


@pytest.mark.parametrize(
    ("host", "token", "refused"),
    [
        ("127.0.0.1", None, False),
        ("127.0.0.2", None, False),
        ("::1", None, False),
        ("[::1]", None, False),
        ("localhost", None, False),
        ("0.0.0.0", None, True),
        ("::", None, True),
        ("192.168.1.20", None, True),
        ("serve.example", None, True),
        ("0.0.0.0", "s3cret", False),
    ],
)
def test_listening_beyond_loopback_needs_a_token(
    host: str, token: str | None, refused: bool
) -> None:
    params = ServiceParams(host=host, token=token)
    if refused:
        with pytest.raises(ConfigError, match="WEBSIM_SERVE_HOST"):
            params.check_exposure()
    else:
        params.check_exposure()


def test_websim_serve_refuses_before_binding(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def never(*_args: object) -> None:
        raise AssertionError("websim serve bound a socket")

    monkeypatch.setattr(serve_command, "listening_socket", never)
    assert main(["serve", "--host", "0.0.0.0", "--index", "missing.idx"]) == 2
    assert "set a token" in capsys.readouterr().err


def test_the_app_refuses_requests_reaching_it_beyond_loopback_without_a_token() -> None:
    # Another ASGI server may bind any address: the app without a token answers loopback only.
    from websim_crawler.service.app import LoopbackOnly

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def status_of(server: tuple[str, int]) -> int:
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b""}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "GET", "path": "/", "headers": [], "server": server}
        await LoopbackOnly(inner)(scope, receive, send)
        return int(sent[0]["status"])

    with ThreadPoolExecutor(1) as thread:  # pytest's reactor runs an asyncio loop here
        for server, status in (
            (("127.0.0.1", 80), 200),
            (("::1", 80), 200),
            (("10.1.2.3", 80), 403),
        ):
            assert thread.submit(asyncio.run, status_of(server)).result() == status


def test_a_reference_added_is_matched_and_written_to_the_index(
    folder: Path, tmp_path: Path
) -> None:
    index = tmp_path / "refs.idx"
    index.write_bytes((folder / "refs.idx").read_bytes())
    settings = config(folder, WEBSIM_MATCH_INDEX=str(index))
    page = (
        b"<html><head><title>Quarterly figures</title></head><body><table>"
        + b"<tr><td><b>quarterly figures</b> of the harbour authority</td></tr>" * 30
        + b"</table></body></html>"
    )
    with running_service(settings) as service:
        status, answer = request(f"{service}/match?url=http://query.example/a", page)
        assert all(match["url"] != "http://new.example/results" for match in answer["matches"])
        status, answer = request(f"{service}/references?url=http://new.example/results", page)
        assert (status, answer) == (201, {"added": "http://new.example/results", "references": 6})
        status, answer = request(f"{service}/references?url=http://new.example/results", page)
        assert (status, answer["error"]) == (409, "duplicate_url")
        assert request(f"{service}/references", page)[1]["error"] == "no_url"
        status, answer = request(f"{service}/match?url=http://query.example/a", page)
        assert answer["matches"][0]["url"] == "http://new.example/results"
        assert answer["matches"][0]["verdict"] == "similar"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["refs.idx"]  # nothing beside
    assert ReferenceIndex.load(index).urls[-1] == "http://new.example/results"


def test_the_openapi_description_and_the_page_are_served(service: str) -> None:
    status, description = request(f"{service}/openapi.json")
    assert status == 200 and description["openapi"].startswith("3.")
    assert {"/match", "/references", "/openapi.json", "/"} <= set(description["paths"])
    status, page = request(f"{service}/")
    assert status == 200 and '<form id="drop">' in page
