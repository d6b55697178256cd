"""Build and check tooling for the book (not part of the package's API): offline MathJax for Sphinx,
the real-browser checks of the built HTML and of JupyterLab."""
