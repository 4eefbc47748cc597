"""The bundled demo search site (``websim demo`` crawls it)."""
