"""The video needle-in-a-haystack benchmark with retrieval in the loop (``vrex niah``; LongVA's V-NIAH).

A needle photograph is inserted as an extra frame at depth d of a long haystack video; after the haystack a
multiple-choice question about the needle follows, and the answer is scored against the truth. Every method runs
the LLM with its own selection deciding the attention at every layer and step (errors propagate), so only a
method that retrieves the needle's KV at the question can answer.

- :mod:`.needles` — the needle photographs (scikit-image's data files), questions, options and truths;
- :mod:`.haystack` — the context: chat template, haystack frames, needles at their depths, question, options;
- :mod:`.run` — one (length, method) cell: one haystack prefill, each question and option a branch from it;
- :mod:`.grid` — the grid of lengths × rotations × methods (local or on a Dask scheduler), aggregated per method;
- :mod:`.report` — tables, heat maps (length × depth) and the accuracy-vs-traffic chart.
"""
