"""LDA: topic models by collapsed Gibbs sampling (SparseLDA on the CPU), corpora, coherence, files.

The coherence functions stay in :mod:`gpu_text.lda.coherence` (the package exports
``topic_coherence``; a re-exported ``coherence`` function would hide the module of that name).

>>> sorted(__all__)[:3]
['LDA', 'TokenCorpus', 'as_corpus']
"""
from gpu_text.lda.coherence import top_words, topic_coherence
from gpu_text.lda.corpus import TokenCorpus, as_corpus
from gpu_text.lda.likelihood import log_likelihood, log_likelihood_per_token
from gpu_text.lda.model import LDA, heldout_perplexity, optimize_alpha

__all__ = ["LDA", "TokenCorpus", "as_corpus", "heldout_perplexity", "log_likelihood",
           "log_likelihood_per_token", "optimize_alpha", "top_words", "topic_coherence"]
