"""Beyond the paper's page analysis: each refinement on a hand-made page, checked by hand."""

from __future__ import annotations

import dataclasses

import pytest

from websim_crawler.core.html import parse_html
from websim_crawler.core.page import (
    AnalysisParams,
    Line,
    analyse_page,
    boilerplate_hint,
    segment_page,
    short_edge_line,
    teaser_line,
)
from websim_crawler.core.text import keyword_tokens, stemmer, stopwords, tokenize

ARTICLE = (
    "<p>Solar panels on the town hall roof now cover half of its yearly electricity needs, "
    "the council said on Monday after a year of measurements.</p>"
    "<p>The installation cost less than planned because the roof needed no extra support, "
    "and the savings will pay for panels on two schools next spring.</p>"
)
PAPER_ONLY = AnalysisParams(
    main_expansion=False,
    markup_hints=False,
    title_line_filter=False,
    furniture_line_filter=False,
    caption_filter=False,
    edge_trim_chars=0,
    edge_link_trim=False,
    size_exponent=0.0,
    main_chunk_ratio=1.0,
)


RELATED_LINKS = " ".join(
    f"<a href='/n{number}'>Council meeting minutes, budget hearing and road works {number}</a>"
    for number in range(6)
)


def page(body: str, title: str = "Town hall solar roof") -> str:
    return f"<html><head><title>{title}</title></head><body>{body}</body></html>"


def test_comment_section_is_noise_by_its_class() -> None:
    html = page(
        f"<div id='story'>{ARTICLE}</div>"
        "<div class='comments'><div>Great news for the town, well done to the council!</div>"
        "<div>I think the money should have gone to the roads instead of this.</div></div>"
    )
    analysis = analyse_page(html)
    comments = [c for c in analysis.chunks if "Great news" in c.text or "roads" in c.text]
    assert [c.reason for c in comments] == ["markup:comments", "markup:comments"]
    assert "Great news" not in analysis.main_text
    off = analyse_page(html, params=AnalysisParams(markup_hints=False))
    assert {c.fate for c in off.chunks if "Great news" in c.text} == {"kept"}


def test_wrapper_named_like_furniture_keeps_its_content() -> None:
    # The article sits in a "has-sidebar" wrapper holding ~97% of the page's link-poor text
    # (>= 50%).
    html = page(
        f"<div class='layout has-sidebar'><div>{ARTICLE}</div></div><div>Call the town hall.</div>"
    )
    analysis = analyse_page(html)
    assert "Solar panels on the town hall roof" in analysis.main_text
    # With a share limit of 1 the wrapper's hint holds, so the article is lost as furniture.
    strict = analyse_page(
        html, params=AnalysisParams(markup_hint_max_share=1.0, markup_hint_min_rest=0.0)
    )
    assert "Solar panels" not in strict.main_text
    assert {c.reason for c in strict.chunks if "Solar" in c.text} == {"markup:sidebar"}


def test_wrapper_share_counts_link_poor_text_only() -> None:
    # 40 menu links (~2,000 characters) dwarf the article (~330) in all text, but they are
    # link text: the "sharing" container holds 330 / (330 + 19) of the link-poor text.
    menu = "".join(
        f"<li><a href='/s{n}'>Section number {n} of the town news</a></li>" for n in range(40)
    )
    html = page(
        f"<nav><ul>{menu}</ul></nav><div class='post-sharing-area'>{ARTICLE}</div>"
        "<div>Call the town hall.</div>"
    )
    no_rest = AnalysisParams(markup_hint_min_rest=0.0)
    assert "Solar panels on the town hall roof" in analyse_page(html, params=no_rest).main_text
    # Above its share (0.95) the container's hint holds and the article is furniture.
    strict = analyse_page(html, params=dataclasses.replace(no_rest, markup_hint_max_share=0.99))
    assert {c.reason for c in strict.chunks if "Solar" in c.text} == {"markup:sharing"}


def test_page_builder_block_name_is_no_furniture() -> None:
    # Every block of the page is an "elementor-widget-container" holding under half of the
    # link-poor text; the hints would leave nothing unhinted, so "widget" names the builder's
    # blocks and is ignored. The footer's and the comments' hints still hold.
    third = "<p>The town will publish the measurements every month on its notice board.</p>"
    blocks = "".join(
        f"<div class='elementor-widget-container'>{part}</div>"
        for part in (*ARTICLE.split("</p>")[:2], third)
        if part
    )
    html = page(
        f"<div>{blocks}</div><div class='comments'><p>Well done to the council!</p></div>"
        "<footer><p>Town Gazette, Market Square 1, Springfield.</p></footer>"
    )
    analysis = analyse_page(html)
    assert "Solar panels on the town hall roof" in analysis.main_text
    assert "notice board" in analysis.main_text
    assert "Well done" not in analysis.main_text and "Market Square" not in analysis.main_text
    assert {c.reason for c in analysis.chunks if "Market" in c.text} == {"markup:footer"}
    off = analyse_page(html, params=AnalysisParams(markup_hint_min_rest=0.0))
    assert {c.reason for c in off.chunks if "Solar" in c.text} == {"markup:widget"}
    assert "Solar panels" not in off.main_text


def test_forum_thread_made_of_comments_keeps_its_posts() -> None:
    posts = "".join(
        f"<div class='comment'><p>{text}</p></div>"
        for text in (
            "Since the update my phone cannot reach the app store over mobile data at all.",
            "Same here: the store loads over wireless but never over the mobile network.",
            "Check the mobile data switch for the store in the settings, it was off for me.",
        )
    )
    html = page(f"<div class='thread'>{posts}</div><footer><p>Forum rules and help</p></footer>")
    text = analyse_page(html).main_text
    assert "mobile data switch" in text and "Forum rules" not in text
    off = analyse_page(html, params=AnalysisParams(markup_hint_min_rest=0.0))
    assert {c.reason for c in off.chunks if "store" in c.text} == {"markup:comment"}


def test_content_class_overrules_furniture_class() -> None:
    root = parse_html(
        "<div class='post tag-news comments-open'>x</div><div class='sharebar'>y</div>"
    )
    first, second = root.iter("div")
    assert boilerplate_hint(first, "div") == ""  # "post" marks content
    assert boilerplate_hint(second, "div") == ""  # "sharebar" is one word, not "share"
    shared = parse_html("<div class='share-buttons'>x</div><aside>y</aside>")
    assert boilerplate_hint(shared.find(".//div"), "div") == "share"
    assert boilerplate_hint(shared.find(".//aside"), "aside") == "aside"


def test_line_shares_are_counted_by_characters() -> None:
    root = parse_html("<div><p>abcd <a href='/x'>efgh</a></p><p class='byline'>By Ann</p></div>")
    lines = segment_page(root).children[0].lines
    # "abcd " (5 chars) + "efgh" (4 chars in a link) -> link share 4/9
    assert lines[0].text == "abcd efgh"
    assert lines[0].link_share == pytest.approx(4 / 9)
    assert lines[1].furniture_share == 1.0 and lines[1].link_share == 0.0


def test_title_byline_date_caption_and_copyright_lines_are_dropped() -> None:
    html = page(
        "<div id='story'><h1>Town hall solar roof</h1>"
        "<p class='byline'>By Ann Example, staff reporter</p>"
        "<p>Published <time>12 March 2024</time></p>"
        f"{ARTICLE}"
        "<figure><img src='roof.jpg'><figcaption>The roof seen from the square.</figcaption>"
        "</figure><p>© 2024 Town Gazette. All rights reserved.</p></div>"
    )
    lines = analyse_page(html).main_text.splitlines()
    assert lines == [
        "Solar panels on the town hall roof now cover half of its yearly electricity needs, "
        "the council said on Monday after a year of measurements.",
        "The installation cost less than planned because the roof needed no extra support, "
        "and the savings will pay for panels on two schools next spring.",
    ]
    # "Published 12 March 2024": "12 March 2024" (13 of 23 chars) is in <time> -> furniture.
    kept = analyse_page(html, params=PAPER_ONLY).main_text.splitlines()
    assert kept[0] == "Town hall solar roof"
    assert "By Ann Example, staff reporter" in kept
    assert "The roof seen from the square." in kept
    assert kept[-1] == "© 2024 Town Gazette. All rights reserved."


def test_link_lines_inside_the_main_content() -> None:
    html = page(
        f"<div id='story'>{ARTICLE}"
        "<p>Read: <a href='/a'>Wind farm plans approved by the county</a></p></div>"
    )
    no_teasers = AnalysisParams(teaser_line_filter=False, edge_link_trim=False)
    default = analyse_page(html, params=no_teasers).main_text
    assert "Wind farm plans" in default  # threshold 1.0: off
    strict_params = dataclasses.replace(no_teasers, line_link_threshold=0.5)
    strict = analyse_page(html, params=strict_params).main_text
    # 39 of 45 characters are link text: 0.87 > 0.5
    assert "Wind farm plans" not in strict
    assert "Solar panels" in strict


def test_edge_trim_drops_short_labels_but_never_everything() -> None:
    assert short_edge_line("Related posts", 40)
    assert not short_edge_line("It works.", 40)
    assert not short_edge_line("A label that is longer than forty characters", 40)
    html = page(f"<div id='story'><p>Share this story</p>{ARTICLE}<p>Related posts</p></div>")
    lines = analyse_page(html).main_text.splitlines()
    assert lines[0].startswith("Solar panels") and lines[-1].endswith("next spring.")
    off = analyse_page(html, params=AnalysisParams(edge_trim_chars=0)).main_text.splitlines()
    assert off[0] == "Share this story" and off[-1] == "Related posts"
    single = analyse_page(page("<div><p>Just one label</p></div>"))
    assert single.main_text == "Just one label"


def test_size_weighting_prefers_the_long_article() -> None:
    # A short teaser list repeating the title words beats the article on the paper's plain sum
    # (T_K is a frequency, not a share), the size-weighted sum picks the article.
    html = page(
        "<div id='teasers'><div>Town hall solar roof: town hall solar roof photos</div>"
        "<div>Town hall solar roof video, town hall solar roof map</div></div>"
        f"<div id='story'>{ARTICLE}</div>"
    )
    paper = analyse_page(html, params=PAPER_ONLY)
    sized = analyse_page(html, params=AnalysisParams(main_chunk_ratio=1.0, main_expansion=False))
    assert "Solar panels" not in paper.main_text
    assert sized.main_text.startswith("Solar panels")
    assert "photos" not in sized.main_text


def test_several_main_chunks_for_a_split_article() -> None:
    second = (
        "<p>Heat pumps under the solar roof of the town hall replaced the old oil boiler, and "
        "the town hall stayed warm through the coldest weeks of January.</p>"
    )
    html = page(
        f"<div id='part1'>{ARTICLE}</div><div>{RELATED_LINKS}</div><div id='part2'>{second}</div>"
    )
    both = analyse_page(html)
    assert len(both.main_chunk_ids) == 2
    assert "Solar panels" in both.main_text and "Heat pumps" in both.main_text
    one = analyse_page(html, params=AnalysisParams(main_chunk_ratio=1.0))
    assert len(one.main_chunk_ids) == 1


def test_german_page_with_german_furniture_names() -> None:
    html = page(
        "<div class='artikel'><p>Die Solaranlage auf dem Dach des Rathauses deckt nun die "
        "Hälfte des jährlichen Strombedarfs, wie die Stadt am Montag mitteilte.</p>"
        "<p>Die Anlage war günstiger als geplant, weil das Dach keine zusätzliche Stütze "
        "brauchte.</p></div><div id='kommentare'><p>Tolle Sache, weiter so liebe Stadt!</p>"
        "</div>",
        title="Solaranlage auf dem Rathaus",
    )
    analysis = analyse_page(html)
    assert analysis.language == "de"
    assert "Tolle Sache" not in analysis.main_text
    assert analysis.keyword_stems["dach"] == 2  # Snowball: "Dach", "Dach(es)" -> "dach"


def test_fast_keyword_path_matches_tokenize_stopwords_and_stems() -> None:
    text = "Die schnellen Füchse springen 2024 über __ x 東京都 Zäune"
    expected = [
        stemmer("de")(token)
        for token in tokenize(text)
        if token not in stopwords("de") and (len(token) > 1 or token in "東京都")
    ]
    assert keyword_tokens(text, "de") == expected
    assert keyword_tokens(text, "de") == expected  # memoised table gives the same
    assert "東京" in expected and "2024" not in expected


def test_main_expansion_adds_link_poor_leaves_beside_the_main_chunk() -> None:
    html = page(
        "<div id='page'><div class='share'>Share this story with friends, neighbours, "
        "colleagues, family, classmates, teachers, doctors, bakers, farmers, drivers, nurses, "
        f"pilots and everyone</div><div id='story'>{ARTICLE}</div>"
        "<ul><li>Panels: 240 modules.</li><li>Output: 80 kilowatts peak.</li></ul>"
        "<ul><li><a href='/a'>Wind farm plans approved</a></li>"
        "<li><a href='/b'>Bus lanes extended</a></li></ul></div>"
    )
    # The removed share and link blocks cancel the fact list's weight: the story alone wins.
    expanded = analyse_page(html)
    assert expanded.main_chunk_ids == ("C1.2",)
    assert expanded.main_text.splitlines()[-2:] == [
        "Panels: 240 modules.",
        "Output: 80 kilowatts peak.",
    ]
    assert "Wind farm" not in expanded.main_text  # hyperlink percentage 1 > 0.2
    facts = next(c for c in expanded.chunks if c.text.startswith("Panels"))
    assert facts.is_main and facts.n_keywords == 5
    alone = analyse_page(html, params=AnalysisParams(main_expansion=False))
    assert "Panels" not in alone.main_text
    few = analyse_page(html, params=AnalysisParams(expansion_min_keywords=6))
    assert "Panels" not in few.main_text


def test_teaser_lines_are_dropped_from_the_main_content() -> None:
    html = page(
        "<div id='story'>"
        f"{ARTICLE}"
        "<p>Read also: <a href='/x'>Council approves the new budget for road works</a></p>"
        "<p>More on this?</p><p><a href='/y'>Wind farm plans for the northern hills</a></p>"
        "<p>Note: <a href='/z'>the map</a> shows the panels on the roof of the town hall.</p>"
        "</div>",
    )
    lines = analyse_page(html, params=AnalysisParams(edge_trim_chars=0)).main_text.splitlines()
    assert not any(line.startswith(("Read also", "More on this")) for line in lines)
    # The link line after a label is not a "Label: <link>" line; it stays (link threshold off).
    assert "Wind farm plans for the northern hills" in lines
    # 'Note: the map shows...' is mostly plain text: kept.
    assert lines[-1].startswith("Note: the map")
    off = AnalysisParams(edge_trim_chars=0, teaser_line_filter=False)
    assert "More on this?" in analyse_page(html, params=off).main_text.splitlines()
    assert teaser_line(Line("Czytaj też: Nowy budżet", 0.7, 0.0, 0.0, False), None)
    assert not teaser_line(Line("[1] http://example.com/a", 0.9, 0.0, 0.0, False), None)


def test_furniture_named_wrapper_of_the_article_keeps_the_article() -> None:
    # A "meta" span around the whole post body wraps the article, not a byline.
    html = page(
        f"<div id='story'><span class='wrapper_meta_field'>{ARTICLE}</span>"
        "<p>A closing line of the article, plain text without any markup.</p>"
        "</div>"
    )
    text = analyse_page(html).main_text
    assert text.startswith("Solar panels") and "next spring." in text
    # A byline span inside plain paragraphs is still dropped.
    byline = page(f"<div id='story'>{ARTICLE}<p><span class='meta'>By Jo Smith</span></p></div>")
    assert (
        "Jo Smith" not in analyse_page(byline, params=AnalysisParams(edge_trim_chars=0)).main_text
    )


def test_content_named_story_inside_a_sidebar_named_wrapper_is_kept() -> None:
    menu = " ".join(f"<a href='/m{n}'>Weather and traffic section {n}</a>" for n in range(40))
    more = "".join(
        f"<div class='teaser'><p>Council approves the road works budget for district {n}</p></div>"
        for n in range(5)
    )
    teasers = (
        "<div class='related'><div class='post'><p>Wind farm plans for the northern hills</p>"
        f"</div>{more}</div>"
    )
    # The wrapper holds under half of the page's link-poor text (the related box holds more),
    # and the page's header text stays unhinted.
    html = page(
        "<div><p>The Town Gazette: news of the town, its council, schools, clubs and people, "
        f"printed every Friday since 1921</p></div><div>{menu}</div>"
        "<div class='with-sidebar'><div class='column'><h2>Weather</h2></div>"
        f"<div id='main-story'>{ARTICLE}</div></div>{teasers}"
    )
    content_names = AnalysisParams(content_name_overrule=True)
    text = analyse_page(html, params=content_names).main_text
    assert text.startswith("Solar panels") and "next spring." in text
    assert "Solar panels" not in analyse_page(html).main_text  # off by default
    # A 'post' teaser holding half of a related box or less stays furniture.
    chunks = {chunk.text: chunk for chunk in analyse_page(html, params=content_names).chunks}
    assert chunks["Wind farm plans for the northern hills"].reason == "markup:related"


def test_orphan_headings_are_dropped() -> None:
    html = page(
        f"<div id='story'><h2>The roof</h2>{ARTICLE}<h3>More on this topic</h3>"
        "<p><a href='/x'>Council approves the road works budget</a></p>"
        "<p><a href='/y'>Wind farm plans for the northern hills</a></p><h3>News</h3></div>"
    )
    params = AnalysisParams(edge_trim_chars=0, edge_link_trim=False, teaser_line_filter=False)
    lines = analyse_page(html, params=params).main_text.splitlines()
    assert lines[0] == "The roof"  # running text follows it
    assert "More on this topic" not in lines and "News" not in lines
    assert "Wind farm plans for the northern hills" in lines
    off = dataclasses.replace(params, orphan_heading_filter=False)
    assert "More on this topic" in analyse_page(html, params=off).main_text.splitlines()
    # Headings alone (no running text at all) stay.
    bare = analyse_page(page("<div><h2>Opening hours</h2><h3>Contact</h3></div>"), params=params)
    assert bare.main_text.splitlines() == ["Opening hours", "Contact"]


def test_lead_paragraph_in_the_header_joins_the_main_content() -> None:
    lead = (
        "<p>The town hall now produces most of its electricity: engineers fitted solar panels "
        "across the roof after the council vote last spring.</p>"
    )
    html = page(
        f"<div id='page'><div class='head'><div><h1>Solar roof</h1></div><div>{RELATED_LINKS}"
        f"</div><div>{RELATED_LINKS}</div><div>{lead}</div></div>"
        f"<div class='body'><div><div id='story'>{ARTICLE}{ARTICLE}</div></div></div></div>"
    )
    text = analyse_page(html).main_text
    assert text.startswith("The town hall now produces") and text.endswith("next spring.")
    off = analyse_page(html, params=AnalysisParams(lead_levels=0)).main_text
    assert off.startswith("Solar panels")


def test_lead_search_passes_a_photo_credit_but_stops_at_links() -> None:
    lead = (
        "<p>The town hall now produces most of its electricity: engineers fitted solar panels "
        "across the roof after the council vote last spring.</p>"
    )
    # Link-poor, 10+ keywords, no sentence end: a photo credit, passed over.
    credit = (
        "<p>The building seen from the market square across the street "
        "in the early morning light © Town Gazette photo desk</p>"
    )
    html = page(
        f"<div id='page'><div class='head'><div>{RELATED_LINKS}</div><div>{RELATED_LINKS}</div>"
        f"<div>{lead}</div>"
        f"<div>{credit}</div></div>"
        f"<div class='body'><div><div id='story'>{ARTICLE}{ARTICLE}</div></div></div></div>"
    )
    text = analyse_page(html).main_text
    assert text.startswith("The town hall now produces") and "Gazette" not in text
    # A kept block with a third of its keywords in links (over 0.2) ends the search.
    linked = html.replace(
        credit,
        credit.replace(
            "© Town Gazette photo desk", "<a href='/p'>© Town Gazette photo desk archive</a>"
        ),
    )
    assert analyse_page(linked).main_text.startswith("Solar panels")


def test_edge_link_trim_drops_link_lines_at_the_edges_only() -> None:
    html = page(
        f"<div id='story'><p><a href='/t1'>Energy</a>, <a href='/t2'>Town hall</a></p>{ARTICLE}"
        "<p>Maps: <a href='/m'>the roof plan drawn by the town engineers</a></p>"
        f"{ARTICLE}<p><a href='/more'>Read more letters to the editor</a></p></div>"
    )
    params = AnalysisParams(edge_trim_chars=0, teaser_line_filter=False)
    lines = analyse_page(html, params=params).main_text.splitlines()
    assert lines[0].startswith("Solar panels") and lines[-1].endswith("next spring.")
    assert "Maps: the roof plan drawn by the town engineers" in lines  # not at an edge
    off = dataclasses.replace(params, edge_link_trim=False)
    lines_off = analyse_page(html, params=off).main_text.splitlines()
    assert lines_off[0] == "Energy, Town hall"
    assert lines_off[-1] == "Read more letters to the editor"


def test_tail_cut_drops_short_blocks_after_the_article() -> None:
    html = page(
        # Each short block holds under 15% of the 580 characters of the article's block.
        f"<div id='story'><div>{ARTICLE}{ARTICLE}</div>"
        "<div>Jane Doe writes about energy for the Town Gazette.</div>"
        "<div>Sign up for our weekly newsletter, it is free.</div></div>"
    )
    analysis = analyse_page(html)
    assert analysis.main_text.endswith("next spring.")
    assert "Jane Doe" not in analysis.main_text and "newsletter" not in analysis.main_text
    assert not [c for c in analysis.chunks if c.is_main and "Jane Doe" in c.text]
    off = analyse_page(html, params=AnalysisParams(tail_leaf_share=0.0)).main_text
    assert off.endswith("it is free.") and "Jane Doe writes" in off
    # A short block before the last sizeable one stays: only the tail is cut.
    middle = page(
        f"<div id='story'><div>{ARTICLE}{ARTICLE}</div>"
        "<div>Jane Doe writes about energy for the Town Gazette.</div>"
        "<div><p>Next year the council wants to add batteries in the basement, so that the "
        "building can store the midday surplus and use it after dark.</p></div></div>"
    )
    assert "Jane Doe writes" in analyse_page(middle).main_text


def test_long_noscript_content_is_kept_short_noscript_dropped() -> None:
    story = ARTICLE * 4  # about 1,160 characters, over the 1,000 kept by default
    html = page(
        f"<div id='post'><script type='text/template'>{story}</script>"
        f"<noscript>{story}</noscript></div>"
        "<noscript><p>Please enable JavaScript to see the comments.</p></noscript>"
    )
    text = analyse_page(html).main_text
    assert text.startswith("Solar panels") and "enable JavaScript" not in text
    off = AnalysisParams(noscript_keep_chars=0)
    assert analyse_page(html, params=off).main_text == ""  # nothing visible is left
    # An unclosed <div> inside a <noscript> makes libxml2 put the rest of the page inside it.
    swallowed = page(f"<noscript><div id='x'></noscript><div id='story'>{story}</div>")
    assert analyse_page(swallowed).main_text.startswith("Solar panels")
