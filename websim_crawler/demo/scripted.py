"""The demo site's JavaScript pages: result lists that only a browser that waits sees in full.

``/js/`` is a search page whose results (``/js/search?q=...``) are fetched late and added one by
one, with a script "Next" button; ``/js/patterns/...`` are the patterns a rendering crawl must
wait for: results added by timers over ~8 s, after a late ``fetch()``, streamed by a worker, on
scroll (infinite scroll), behind a script "Next" button, and behind ASP.NET ``__doPostBack``
links (server-rendered, so a crawl without a browser can follow them by submitting the form).
Every result is ``<li class="result">`` with a link to its record.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from websim_crawler.demo.site import Archive, Record

Wrap = Callable[..., str]  # the site template: wrap(title, main, query=...) -> page
RESULTS_PER_PAGE = 5
PATTERNS = ("timers", "late-fetch", "worker", "scroll", "script-next", "postback")
TIMER_RESULTS = 16  # added one every 0.5 s: 8 s in all
SCROLL_BATCH = 10
SCROLL_RESULTS = 40
POSTBACK_PAGES = 4


@dataclass(frozen=True)
class Answer:
    """What the server sends: status, body, content type and a delay before it (seconds)."""

    status: int
    body: str
    content_type: str = "text/html"
    delay: float = 0.0


def result_item(record: Record) -> str:
    """Return one result as server-rendered HTML."""
    snippet = escape(" ".join(record.paragraphs[0].split()[:20]))
    return (
        f'<li class="result"><h3><a href="/record/{record.number}">{escape(record.title)}</a>'
        f"</h3><p>{snippet} ...</p></li>"
    )


# The client side of every pattern: add results (as JSON from the API) one by one.
_ADD_RESULTS = """
const list = document.getElementById("results");
function addResult(result) {
  const item = document.createElement("li");
  item.className = "result";
  item.innerHTML = '<h3><a href="/record/' + result.number + '"></a></h3><p></p>';
  item.querySelector("a").textContent = result.title;
  item.querySelector("p").textContent = result.snippet + " ...";
  list.appendChild(item);
}
function addOneByOne(results, interval, done) {
  results.forEach((result, index) => setTimeout(() => {
    addResult(result);
    if (index === results.length - 1 && done) { done(); }
  }, interval * (index + 1)));
}
"""

_SCRIPTS = {
    "timers": """
fetch("/api/results?first=0&count=%(timers)d").then(r => r.json())
  .then(data => addOneByOne(data.results, 500));
""",
    "late-fetch": """
setTimeout(() => fetch("/api/results?first=0&count=12&delay=1.5").then(r => r.json())
  .then(data => data.results.forEach(addResult)), 2000);
""",
    "worker": """
const source = "onmessage = async (event) => {" +
  "const data = await (await fetch(event.data)).json();" +
  "for (const result of data.results) {" +
  "  await new Promise(done => setTimeout(done, 300)); postMessage(result); } };";
const worker = new Worker(URL.createObjectURL(new Blob([source], {type: "text/javascript"})));
worker.onmessage = (event) => addResult(event.data);
worker.postMessage(location.origin + "/api/results?first=0&count=10");
""",
    "scroll": """
let loaded = 0, loading = false;
function more() {
  if (loading || loaded >= %(scroll_total)d) { return; }
  loading = true;
  fetch("/api/results?first=" + loaded + "&count=%(scroll_batch)d&delay=0.3")
    .then(r => r.json()).then(data => {
      data.results.forEach(addResult); loaded += data.results.length; loading = false;
    });
}
window.addEventListener("scroll", () => {
  if (window.innerHeight + window.scrollY >= document.body.scrollHeight - 200) { more(); }
});
more();
""",
}

_SEARCH_SCRIPT = """
const next = document.getElementById("next");
let page = %(page)d;
function load() {
  setTimeout(() => fetch("/api/search?" + new URLSearchParams({q: %(query)s, page: page}))
    .then(r => r.json()).then(data => addOneByOne(data.results, 250, () => {
      next.hidden = page >= data.pages;
    })), 800);
}
next.addEventListener("click", () => {
  page += 1;
  history.pushState(null, "", "?" + new URLSearchParams({q: %(query)s, page: page}));
  list.innerHTML = "";
  next.hidden = true;
  load();
});
load();
"""


def _results_json(records: list[Record]) -> str:
    return json.dumps(
        {
            "results": [
                {
                    "number": record.number,
                    "title": record.title,
                    "snippet": " ".join(record.paragraphs[0].split()[:20]),
                }
                for record in records
            ]
        }
    )


def _number(parameters: dict[str, str], name: str, default: int, maximum: int) -> int:
    text = parameters.get(name, "")
    return min(int(text), maximum) if text.isdigit() else default


def answer(archive: Archive, wrap: Wrap, path: str, parameters: dict[str, str]) -> Answer | None:
    """Answer a ``/js/`` or ``/api/`` request, or ``None`` for another path."""
    if path == "/api/results":
        first = _number(parameters, "first", 0, len(archive.records))
        count = _number(parameters, "count", RESULTS_PER_PAGE, len(archive.records))
        delay = min(float(parameters.get("delay", "0") or 0), 5.0)
        chosen = archive.records[first : first + count]
        return Answer(200, _results_json(chosen), "application/json", delay)
    if path == "/api/search":
        results = archive.search(parameters.get("q", ""))
        page = max(1, _number(parameters, "page", 1, 10_000))
        shown = results[(page - 1) * RESULTS_PER_PAGE : page * RESULTS_PER_PAGE]
        data = json.loads(_results_json(shown))
        data["pages"] = max(1, math.ceil(len(results) / RESULTS_PER_PAGE))
        return Answer(200, json.dumps(data), "application/json", 0.3)
    if path == "/js/":
        main = """<h1>Search the archive (JavaScript edition)</h1>
<p>Results are fetched and shown by a script, one by one.</p>"""
        return Answer(200, wrap("JavaScript search", main, search="/js/search"))
    if path == "/js/search":
        query = parameters.get("q", "")
        page = max(1, _number(parameters, "page", 1, 10_000))
        script = _SEARCH_SCRIPT % {"page": page, "query": json.dumps(query)}
        main = f"""<h1>Search results for <em>{escape(query)}</em></h1>
<ol class="results" id="results"></ol>
<nav class="pagination"><button id="next" type="button" hidden>Next &rsaquo;</button></nav>
<script>{_ADD_RESULTS}{script}</script>"""
        return Answer(200, wrap(f"Search: {query}", main, query=query, search="/js/search"))
    if path == "/js/patterns/":
        links = "".join(f'<li><a href="/js/patterns/{name}">{name}</a></li>' for name in PATTERNS)
        return Answer(200, wrap("Script patterns", f"<h1>Script patterns</h1><ul>{links}</ul>"))
    if path.startswith("/js/patterns/"):
        return _pattern(archive, wrap, path.removeprefix("/js/patterns/"), parameters)
    return None


def _pattern(archive: Archive, wrap: Wrap, name: str, parameters: dict[str, str]) -> Answer | None:
    if name == "script-next":
        query = {"q": parameters.get("q", "volcanoes"), **parameters}
        return answer(archive, wrap, "/js/search", query)
    if name == "postback":
        return Answer(200, wrap("Postback results", postback_results(archive, parameters)))
    if name not in _SCRIPTS:
        return None
    values = {"timers": TIMER_RESULTS, "scroll_total": SCROLL_RESULTS, "scroll_batch": SCROLL_BATCH}
    main = f"""<h1>Results ({escape(name)})</h1><ol class="results" id="results"></ol>
<script>{_ADD_RESULTS}{_SCRIPTS[name] % values}</script>"""
    return Answer(200, wrap(f"Pattern: {name}", main))


def postback_results(archive: Archive, fields: dict[str, str]) -> str:
    """Return an ASP.NET-style result page: one form, view state, ``__doPostBack`` pager."""
    page = _number(fields, "__VIEWSTATE", 1, POSTBACK_PAGES)
    if fields.get("__EVENTTARGET") == "ctl00$Pager" and fields.get("__EVENTARGUMENT") == "Next":
        page = min(page + 1, POSTBACK_PAGES)
    shown = archive.records[(page - 1) * RESULTS_PER_PAGE : page * RESULTS_PER_PAGE]
    items = "".join(result_item(record) for record in shown)
    pager = (
        """<a href="javascript:__doPostBack('ctl00$Pager','Next')">Next &rsaquo;</a>"""
        if page < POSTBACK_PAGES
        else ""
    )
    return f"""<form method="post" action="/js/patterns/postback" id="aspnetForm">
<input type="hidden" name="__EVENTTARGET" value=""><input type="hidden" name="__EVENTARGUMENT"
value=""><input type="hidden" name="__VIEWSTATE" value="{page}">
<script>function __doPostBack(target, argument) {{
  const form = document.getElementById("aspnetForm");
  form.__EVENTTARGET.value = target; form.__EVENTARGUMENT.value = argument; form.submit();
}}</script>
<h1>Results, page {page} of {POSTBACK_PAGES}</h1><ol class="results">{items}</ol>
<div class="pager">{pager}</div></form>"""
