"""The store's query language and ranking, shared by every engine: the filter language's parse tree, a query's
terms, score fusion, the speakers a question names, the time window it names, and ``explain``."""
