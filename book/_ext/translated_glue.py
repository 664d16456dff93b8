"""Glued figures inside translated paragraphs.

A translated paragraph (Sphinx's i18n) is parsed as a document of its own, apart from its
notebook, so myst-nb's glue roles in it would find no glue data ("No key ... found in glue
data for this document"). This extension notes each notebook's element renderer, which holds
the notebook's glue data, under the page's name when myst-nb creates it; a glue role in a
translated paragraph of that page then reads the same data. The Japanese edition thus pastes
the same executed figures as the English one.
"""

from __future__ import annotations

import myst_nb.sphinx_ as nb_sphinx
from docutils import nodes
from myst_nb.ext.glue import roles, utils
from sphinx.application import Sphinx

#: docname -> the element renderer of that notebook (``renderer.nb_client.glue_data``)
_RENDERERS: dict[str, object] = {}
_APP: list[Sphinx] = []


def _recording(load_renderer):
    def load(name: str):
        cls = load_renderer(name)

        def make(*args, **kwargs):
            element = cls(*args, **kwargs)
            if _APP and _APP[0].env is not None:
                _RENDERERS[_APP[0].env.docname] = element
            return element

        return make

    return load


def _retrieve(document: nodes.document, key: str):
    if "nb_renderer" in document:  # the notebook itself
        return utils.retrieve_glue_data(document, key)
    env = getattr(document.settings, "env", None)
    renderer = _RENDERERS.get(getattr(env, "docname", None))
    if renderer is None:
        return utils.retrieve_glue_data(document, key)  # raises, naming the key
    document["nb_renderer"] = renderer  # only while the data is read: a doctree is pickled
    try:
        return utils.retrieve_glue_data(document, key)
    finally:
        del document["nb_renderer"]


def setup(app: Sphinx) -> dict:
    _APP[:] = [app]
    if not getattr(nb_sphinx.load_renderer, "_records", False):
        nb_sphinx.load_renderer = _recording(nb_sphinx.load_renderer)
        nb_sphinx.load_renderer._records = True
    roles.retrieve_glue_data = _retrieve  # the roles' lookup, with the page's data as fallback
    return {"parallel_read_safe": False, "parallel_write_safe": True}
