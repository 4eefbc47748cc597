"""A search form's other inputs: which of them reach different records, and how to fill them.

Pure: works on the ``lxml.html`` element of a form and on what its submissions brought back.
The idea is Madhavan et al.'s ("Google's Deep-Web Crawl", VLDB 2008): rather than the Cartesian
product of every input's values, find the *informative* inputs, those whose values answer with
different records, and submit those alone; combine two only where one alone hits the site's cap.

* Each select, radio group and checkbox is probed value by value, alone, the text box empty
  (after one submission of the form as it is): at most ``max_values`` values of one input,
  sampled evenly when it has more.
* An input is informative when its values' answers differ in *which* records they hold, not
  only in their order or number: when the site states counts, the counts of its values differ
  (a sort or a page size keeps the count); else the records of the values' first result pages
  overlap little (mean Jaccard below one half) and no value's records contain another's.
* A value whose answer was capped (more matches stated than shown, or a next page left) is
  submitted again with each value of another informative input.
* The stated counts of an informative select's values (one value at a time: they do not
  overlap) add up to the database's size, when every value was probed.
* Typed inputs (number, date, email, ...) are never given words: left empty when optional,
  given a value of their type (its ``value``, ``min``) when required. A required text input the
  crawl cannot fill (a CAPTCHA, a login) is named (``unfillable``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from lxml import etree

from websim_crawler.core.surfacing.counts import ResultCount

_CHOICE_TYPES = frozenset({"radio", "checkbox"})
_TYPED_TYPES = frozenset(
    {"number", "range", "date", "datetime-local", "month", "week", "time", "email", "tel",
     "url", "color"}
)  # fmt: skip
_SKIPPED_TYPES = frozenset({"hidden", "submit", "image", "reset", "button", "file"})
_OVERLAP_LIMIT = 0.5  # mean Jaccard of the values' first pages above which an input only sorts
_TYPED_DEFAULTS = {
    "number": "1",
    "range": "1",
    "date": "2000-01-01",
    "month": "2000-01",
    "week": "2000-W01",
    "time": "12:00",
    "datetime-local": "2000-01-01T12:00",
    "color": "#000000",
}


@dataclass(frozen=True)
class FormInput:
    """One input of a search form (a radio group or a select counts once)."""

    name: str
    kind: str  # select, radio, checkbox, typed, text
    values: tuple[str, ...] = ()  # the values it offers (select options, radio values)
    default: str = ""  # the value submitted when it is left alone ("" for none)
    required: bool = False


@dataclass
class _Probe:
    """One submission of the plan and what it brought back."""

    key: str
    fields: dict[str, str]
    input_name: str | None  # the input probed alone, None for a combination or the baseline
    value: str = ""
    records: set[str] = field(default_factory=set)
    first_page: frozenset[str] | None = None
    matches: int | None = None
    capped: bool = False
    finished: bool = False


def form_inputs(form: etree._Element, query_field: str) -> list[FormInput]:
    """Return the inputs of a form other than its query box, in document order."""
    found: dict[str, FormInput] = {}
    for element in form.iter("input", "select", "textarea"):
        name = element.get("name")
        if not name or name == query_field or (name in found and element.tag != "input"):
            continue
        if element.tag == "select":
            options = element.findall(".//option")
            values = tuple(
                (
                    option.get("value") if option.get("value") is not None else option.text or ""
                ).strip()
                for option in options
            )
            chosen = [value for option, value in zip(options, values, strict=True)
                      if option.get("selected") is not None]  # fmt: skip
            default = chosen[0] if chosen else (values[0] if values else "")
            found[name] = FormInput(
                name, "select", values, default, element.get("required") is not None
            )
            continue
        kind = (element.get("type") or "text").strip().lower() if element.tag == "input" else "text"
        if kind in _SKIPPED_TYPES:
            continue
        required = element.get("required") is not None
        if kind in _CHOICE_TYPES:
            value = element.get("value") if element.get("value") is not None else "on"
            known = found.get(name)
            values = (*known.values, value) if known else (value,)
            default = (known.default if known else "") or (
                value if element.get("checked") is not None else ""
            )
            found[name] = FormInput(
                name, kind, values, default, required or bool(known and known.required)
            )
        elif kind in _TYPED_TYPES:
            found[name] = FormInput(name, "typed:" + kind, (), element.get("value") or "", required)
        else:
            found[name] = FormInput(name, "text", (), element.get("value") or "", required)
    return list(found.values())


def search_form_inputs(
    form: etree._Element, query_field: str
) -> tuple[list[FormInput], dict[str, str], str | None]:
    """Return a search form's other inputs, the values its required typed inputs get, and the
    name of a required input the crawl cannot fill (``None`` when there is none)."""
    inputs = form_inputs(form, query_field)
    fixed = {
        one.name: typed_value(one, form)
        for one in inputs
        if one.required and one.kind.startswith("typed:")
    }
    blocking = unfillable(inputs)
    return inputs, fixed, blocking.name if blocking is not None else None


def unfillable(inputs: list[FormInput]) -> FormInput | None:
    """Return a required input the crawl cannot fill (a free-text box other than the query:
    a CAPTCHA, a user name), or ``None``."""
    for one in inputs:
        if one.required and one.kind == "text" and not one.default:
            return one
    return None


def typed_value(one: FormInput, form: etree._Element) -> str:
    """Return a value of a required typed input's type (its own value, its ``min``, a default)."""
    if one.default:
        return one.default
    for element in form.iter("input"):
        if element.get("name") == one.name and element.get("min"):
            return str(element.get("min"))
    return _TYPED_DEFAULTS.get(one.kind.removeprefix("typed:"), "")


class FormPlan:
    """The submissions that probe and use a form's selects, radios and checkboxes."""

    def __init__(
        self, inputs: list[FormInput], fixed: dict[str, str], query_field: str, max_values: int
    ) -> None:
        self.inputs = [one for one in inputs if one.kind in ("select", "radio", "checkbox")]
        self.fixed = dict(fixed)  # required typed inputs, filled once
        self.query_field = query_field
        self.max_values = max_values
        self._probes: dict[str, _Probe] = {}
        self._queue: list[_Probe] = [self._probe({}, None, "")] if self.inputs else []
        for one in self.inputs:
            for value in _sampled(_probe_values(one), max_values):
                self._queue.append(self._probe({one.name: value}, one.name, value))
        self.verdicts: dict[str, tuple[bool, str]] = {}  # input -> (informative, why)
        self._combined = False

    def _probe(self, fields: dict[str, str], name: str | None, value: str) -> _Probe:
        submitted = {self.query_field: "", **self.fixed, **fields}
        key = "&".join(f"{k}={v}" for k, v in sorted(fields.items())) or "(the form as it is)"
        return _Probe("form: " + key, submitted, name, value)

    def fields_of(self, key: str) -> dict[str, str] | None:
        """Return the fields a submission of the plan sends, ``None`` for a key not the plan's."""
        probe = self._probes.get(key)
        return dict(probe.fields) if probe is not None else None

    def next_submission(self) -> str | None:
        """Return the key of the next submission to make (``None``: nothing now, or done)."""
        self._combine_when_probed()
        if not self._queue:
            return None
        probe = self._queue.pop(0)
        self._probes[probe.key] = probe
        return probe.key

    def pending(self) -> bool:
        """Tell whether the plan has submissions left or waiting for answers."""
        return (
            bool(self._queue)
            or (not self._combined and bool(self.inputs))
            or any(not probe.finished for probe in self._probes.values())
        )

    def observe(self, key: str, records: list[str], count: ResultCount, has_next: bool) -> None:
        """Account for one result page of a submission of the plan."""
        probe = self._probes.get(key)
        if probe is None:
            return
        if probe.first_page is None:
            probe.first_page = frozenset(records)
        probe.records.update(records)
        if count.matches is not None:
            probe.matches = count.matches
        probe.capped = has_next or (
            probe.matches is not None and probe.matches > len(probe.records)
        )

    def finish(self, key: str, capped: bool) -> None:
        """Mark a submission's answer complete (``capped``: its pages stopped before its end)."""
        probe = self._probes.get(key)
        if probe is not None:
            probe.finished = True
            probe.capped = capped or (
                probe.matches is not None and probe.matches > len(probe.records)
            )

    def partition_total(self) -> int | None:
        """Return the database size as the sum of an informative select's stated counts."""
        for one in self.inputs:
            verdict = self.verdicts.get(one.name)
            if one.kind != "select" or not verdict or not verdict[0]:
                continue
            probes = [p for p in self._probes.values() if p.input_name == one.name]
            values = [value for value in _probe_values(one)]
            if len(probes) == len(values) and all(p.matches is not None for p in probes):
                return sum(p.matches or 0 for p in probes)
        return None

    def _combine_when_probed(self) -> None:
        """Once every probe is answered: judge the inputs, queue the combinations."""
        if not self._queue and not self._combined and self._all_probed():
            self._judge()
            self._queue.extend(self._combinations())
            self._combined = True

    def _all_probed(self) -> bool:
        return all(probe.finished for probe in self._probes.values())

    def _judge(self) -> None:
        for one in self.inputs:
            probes = [p for p in self._probes.values() if p.input_name == one.name]
            answered = [p for p in probes if p.records]
            if len(answered) < 2 and not (one.kind == "checkbox" and answered):
                self.verdicts[one.name] = (False, "fewer than two of its values bring records")
                continue
            counts = [p.matches for p in answered]
            if all(count is not None for count in counts):
                informative = len(set(counts)) > 1 or one.kind == "checkbox"
                why = (
                    "its values' stated counts differ"
                    if informative
                    else ("every value states the same count (it sorts or pages)")
                )
            else:
                pages = [p.first_page or frozenset() for p in answered]
                pairs = list(itertools.combinations(pages, 2))
                overlap = sum(_jaccard(a, b) for a, b in pairs) / max(len(pairs), 1)
                nested = any(a <= b or b <= a for a, b in pairs)
                informative = overlap < _OVERLAP_LIMIT and not nested
                why = f"its values' first pages overlap {overlap:.2f}" + (
                    ", one inside another" if nested else ""
                )
            self.verdicts[one.name] = (informative, why)

    def _combinations(self) -> list[_Probe]:
        """Return the capped values of the finest informative input, each combined with every
        value of the next finest (a radio group of kinds inside a too-large category)."""
        informative = sorted(
            (
                one
                for one in self.inputs
                if self.verdicts.get(one.name, (False, ""))[0] and one.kind != "checkbox"
            ),
            key=lambda one: -len(_probe_values(one)),
        )
        if len(informative) < 2:
            return []
        finest, second = informative[0], informative[1]
        capped = [p for p in self._probes.values() if p.input_name == finest.name and p.capped]
        return [
            self._probe({finest.name: probe.value, second.name: value}, None, "")
            for probe in capped
            for value in _sampled(_probe_values(second), self.max_values)
        ]

    def replay_chosen(self, key: str) -> None:
        """Take a submission an earlier run of the crawl made off the queue (resume)."""
        self._combine_when_probed()
        for index, probe in enumerate(self._queue):
            if probe.key == key:
                self._probes[key] = self._queue.pop(index)
                return


def _probe_values(one: FormInput) -> list[str]:
    """Return the values of an input to probe: every value but the one it has by default."""
    if one.kind == "checkbox":
        return [value for value in one.values if value != one.default]
    return [value for value in dict.fromkeys(one.values) if value != one.default]


def _sampled(values: list[str], limit: int) -> list[str]:
    """Return at most ``limit`` values, spread evenly over the list."""
    if len(values) <= limit:
        return values
    step = len(values) / limit
    return [values[math.floor(index * step)] for index in range(limit)]


def _jaccard(first: frozenset[str], second: frozenset[str]) -> float:
    union = len(first | second)
    return len(first & second) / union if union else 1.0
