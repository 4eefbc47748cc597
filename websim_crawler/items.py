"""The page item every websim spider yields and every websim pipeline fills in."""

from __future__ import annotations

import scrapy


class PageItem(scrapy.Item):
    """One crawled page; the analysis pipeline adds the fields after ``links``."""

    url = scrapy.Field()
    query = scrapy.Field()
    page = scrapy.Field()
    kind = scrapy.Field()
    status = scrapy.Field()
    title = scrapy.Field()
    html = scrapy.Field()
    links = scrapy.Field()
    screenshot = scrapy.Field()
    render_partial = scrapy.Field()
    encoding_confidence = scrapy.Field()
    # Added by PageAnalysisPipeline.
    language = scrapy.Field()
    main_text = scrapy.Field()
    keywords = scrapy.Field()
    keyword_stems = scrapy.Field()
    chunks = scrapy.Field()
    # Added by MatchPipeline: the best references of WEBSIM_MATCH_INDEX.
    reference_matches = scrapy.Field()
