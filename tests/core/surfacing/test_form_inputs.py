"""A search form's other inputs: read, judged informative or not, combined, filled by type."""

from __future__ import annotations

from lxml import html as lxml_html

from websim_crawler.core.surfacing import (
    FormPlan,
    ResultCount,
    form_inputs,
    search_form_inputs,
)

FORM = """<form action="/search"><input name="q">
<select name="shelf"><option value="">All</option><option>poetry</option>
<option value="sci">Science</option><option value="hist">History</option></select>
<label><input type="radio" name="kind" value="" checked> any</label>
<label><input type="radio" name="kind" value="book"> book</label>
<label><input type="radio" name="kind" value="film"> film</label>
<input type="checkbox" name="new" value="1"> <input type="number" name="year" min="1990">
<input type="date" name="since" required> <input type="hidden" name="token" value="t">
<select name="sort"><option>relevance</option><option selected>date</option></select>
<button>Search</button></form>"""


def form() -> lxml_html.HtmlElement:
    return lxml_html.fromstring(FORM)


def test_every_kind_of_input_is_read_with_its_values_and_default() -> None:
    inputs = {one.name: one for one in form_inputs(form(), "q")}
    assert list(inputs) == ["shelf", "kind", "new", "year", "since", "sort"]
    assert inputs["shelf"].values == ("", "poetry", "sci", "hist") and inputs["shelf"].default == ""
    assert inputs["kind"].kind == "radio" and inputs["kind"].values == ("", "book", "film")
    assert inputs["new"].kind == "checkbox" and inputs["new"].default == ""
    assert inputs["year"].kind == "typed:number" and not inputs["year"].required
    assert inputs["sort"].default == "date"
    _, fixed, blocking = search_form_inputs(form(), "q")
    assert fixed == {"since": "2000-01-01"}  # a required date gets a date, never a word
    assert blocking is None


def test_a_required_text_input_other_than_the_query_box_is_named() -> None:
    captcha = lxml_html.fromstring('<form><input name="q"><input name="answer" required></form>')
    assert search_form_inputs(captcha, "q")[2] == "answer"


def answer(plan: FormPlan, key: str, records: list[str], matches: int | None, capped: bool) -> None:
    plan.observe(key, records, ResultCount(matches), capped)
    plan.finish(key, capped)


def run_probes(plan: FormPlan, answers: dict[str, tuple[list[str], int | None, bool]]) -> list[str]:
    """Answer every submission the plan makes; return their keys in order."""
    keys = []
    while (key := plan.next_submission()) is not None:
        keys.append(key)
        records, matches, capped = answers.get(key, ([], None, False))
        answer(plan, key, records, matches, capped)
    return keys


def test_inputs_whose_values_answer_different_records_are_informative_and_combined() -> None:
    inputs, fixed, _ = search_form_inputs(form(), "q")
    plan = FormPlan(inputs, fixed, "q", max_values=10)
    shelves = {"poetry": 30, "sci": 80, "hist": 25}  # sci holds more than the cap of 50
    answers = {
        f"form: shelf={shelf}": ([f"{shelf}{n}" for n in range(min(size, 50))], size, size > 50)
        for shelf, size in shelves.items()
    }
    answers |= {
        "form: kind=book": ([f"b{n}" for n in range(50)], 70, True),
        "form: kind=film": ([f"f{n}" for n in range(50)], 65, True),
        "form: sort=relevance": ([f"poetry{n}" for n in range(50)], 135, True),
    }
    keys = run_probes(plan, answers)
    assert keys[0] == "form: (the form as it is)"
    assert plan.verdicts["shelf"][0] and plan.verdicts["kind"][0]
    assert not plan.verdicts["sort"][0]  # its only other value brings what the default does
    # Only the capped shelf is split, by the kinds (and never the Cartesian product of all).
    assert keys[-2:] == ["form: kind=book&shelf=sci", "form: kind=film&shelf=sci"]
    assert plan.fields_of("form: kind=book&shelf=sci") == {
        "q": "", "since": "2000-01-01", "kind": "book", "shelf": "sci"
    }  # fmt: skip
    assert plan.partition_total() == 135
    assert not plan.pending()


def test_without_counts_an_input_that_only_reorders_is_not_informative() -> None:
    inputs, fixed, _ = search_form_inputs(form(), "q")
    plan = FormPlan([one for one in inputs if one.name in ("shelf", "sort")], fixed, "q", 10)
    same = [f"r{n}" for n in range(10)]
    answers = {
        "form: shelf=poetry": (["p1", "p2"], None, False),
        "form: shelf=sci": (["s1", "s2", "s3"], None, False),
        "form: shelf=hist": (["h1"], None, False),
        "form: sort=relevance": (same, None, False),
        "form: (the form as it is)": (list(reversed(same)), None, False),
    }
    run_probes(plan, answers)
    assert plan.verdicts["shelf"][0]
    assert plan.partition_total() is None  # no stated counts: no size from the partition


def test_large_domains_are_sampled_evenly() -> None:
    options = "".join(f"<option>{year}</option>" for year in range(1900, 2000))
    page = lxml_html.fromstring(f'<form><input name="q"><select name="y">{options}</select></form>')
    plan = FormPlan(form_inputs(page, "q"), {}, "q", max_values=10)
    keys = run_probes(plan, {})
    assert len(keys) == 1 + 10
    assert keys[1:3] == ["form: y=1901", "form: y=1910"]
