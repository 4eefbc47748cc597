"""The pure core: algorithms on HTML, text and arrays. Never imports scrapy or twisted."""
