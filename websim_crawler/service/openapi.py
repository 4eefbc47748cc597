"""The service's OpenAPI 3.1 description (``GET /openapi.json``), written out by hand."""

from __future__ import annotations

from typing import Any

from websim_crawler import __version__
from websim_crawler.core.similarity.params import QUESTION_NAMES

_STAGE_SCORES = {
    "type": "object",
    "properties": {
        stage: {"type": ["number", "null"]} for stage in ("layout", "text", "links", "visual")
    },
}
_MATCH_LINE = {
    "type": "object",
    "description": "The line websim match prints for the page.",
    "required": ["url", "question", "matches"],
    "properties": {
        "url": {"type": ["string", "null"]},
        "question": {"type": "string"},
        "matches": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["url", "score", "verdict", "decided_by", "stages"],
                "properties": {
                    "url": {"type": "string"},
                    "score": {"type": ["number", "null"]},
                    "verdict": {"type": "string"},
                    "decided_by": {"type": "array", "items": {"type": "string"}},
                    "stages": _STAGE_SCORES,
                    "brand": {
                        "type": ["object", "null"],
                        "description": "the brand features both pages share (question brand)",
                        "properties": {
                            "score": {"type": "number"},
                            "features": {"type": "string"},
                        },
                    },
                    "reason": {
                        "type": "string",
                        "description": "why the verdict is what it is, and what decided it",
                    },
                },
            },
        },
        "problems": {"type": "array", "items": {"type": "string"}},
    },
}
_ERROR = {
    "type": "object",
    "required": ["error", "message"],
    "properties": {"error": {"type": "string"}, "message": {"type": "string"}},
}
_PAGE_FIELDS = {
    "url": {
        "type": "string",
        "description": "URL the page is compared under (its relative links resolve on it when "
        "http(s)); in an archive, the WARC-Target-URI of the page to take",
    },
    "question": {"type": "string", "enum": ["auto", *QUESTION_NAMES]},
    "top": {"type": "integer", "minimum": 1, "maximum": 1000},
}
_PAGE_BODY = {
    "required": True,
    "content": {
        "text/html": {
            "schema": {"type": "string"},
            "description": "The page's HTML, or a WARC/WACZ (told by content) holding it",
        },
        "application/warc": {"schema": {"type": "string", "format": "binary"}},
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["page"],
                "properties": {
                    "page": {"type": "string", "format": "binary"},
                    "screenshot": {"type": "string", "format": "binary"},
                    **_PAGE_FIELDS,
                },
            }
        },
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {
                    "html": {"type": "string"},
                    "page_base64": {"type": "string", "contentEncoding": "base64"},
                    "screenshot_base64": {"type": "string", "contentEncoding": "base64"},
                    **_PAGE_FIELDS,
                },
            }
        },
    },
}
_QUERY = [
    {"name": name, "in": "query", "required": False, "schema": schema}
    for name, schema in _PAGE_FIELDS.items()
]


def _errors(*statuses: int) -> dict[str, Any]:
    meaning = {
        401: "the token is missing or wrong",
        409: "a reference with this URL is in the index",
        413: "the request, the page or the screenshot is over its bound",
        422: "the page cannot be analysed or the request is malformed",
    }
    return {
        str(status): {
            "description": meaning[status],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
        for status in statuses
    }


def openapi_description() -> dict[str, Any]:
    """Return the OpenAPI description of the service."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "websim match service",
            "version": __version__,
            "description": "Which known pages does this page look like? Answers as websim match.",
        },
        "components": {
            "schemas": {"MatchLine": _MATCH_LINE, "Error": _ERROR},
            "securitySchemes": {
                "token": {"type": "http", "scheme": "bearer"},
                "browser": {"type": "http", "scheme": "basic"},
            },
        },
        "security": [{"token": []}, {"browser": []}, {}],
        "paths": {
            "/match": {
                "post": {
                    "summary": "match a page against the index",
                    "parameters": _QUERY,
                    "requestBody": _PAGE_BODY,
                    "responses": {
                        "200": {
                            "description": "the page's line, as websim match prints it",
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/MatchLine"}
                                }
                            },
                        },
                        **_errors(401, 413, 422),
                    },
                }
            },
            "/references": {
                "post": {
                    "summary": "add a reference to the index (written to the index file)",
                    "parameters": _QUERY[:1],
                    "requestBody": _PAGE_BODY,
                    "responses": {
                        "201": {
                            "description": "added",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "added": {"type": "string"},
                                            "references": {"type": "integer"},
                                        },
                                    }
                                }
                            },
                        },
                        **_errors(401, 409, 413, 422),
                    },
                }
            },
            "/health": {
                "get": {
                    "summary": "the number of references",
                    "responses": {"200": {"description": '{"references": N}'}},
                }
            },
            "/openapi.json": {
                "get": {"summary": "this description", "responses": {"200": {"description": "ok"}}}
            },
            "/": {
                "get": {
                    "summary": "a web page: drop a saved page, see its best matches",
                    "responses": {"200": {"description": "text/html"}},
                }
            },
        },
    }
