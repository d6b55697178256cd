# Lets `pytest --nbval` collect the book's MyST Markdown chapters (book/*.md).
pytest_plugins = ["eaglebook.nbval_plugin"]
