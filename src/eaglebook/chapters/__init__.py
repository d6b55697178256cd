"""What only one chapter needs, one module per chapter, named after it (``train`` for ``book/03_train.md``).

A chapter module holds the chapter's results type and summaries, its figures, its data-dependent phrases
(each a small tested function returning the words a sentence needs) and its glue: ``glued(...)`` returns
the ``key -> value`` mapping the chapter glues in one call (:meth:`eaglebook.chapter.Chapter.glue`), and
``recorded(...)`` the values of its declared comparisons (:mod:`eaglebook.comparisons`) for one call of
:meth:`eaglebook.chapter.Chapter.record`.  The chapter itself shows the science in short cells and keeps
its sentences in Markdown.  Shared figure standards stay in :mod:`eaglebook.plotting`.
"""
