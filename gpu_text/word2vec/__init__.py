"""word2vec: CBOW and skip-gram with hierarchical softmax and negative sampling (gensim's meaning).

>>> sorted(__all__)[:3]
['EncodedCorpus', 'HuffmanTree', 'KeyedVectors']
"""
from gpu_text.word2vec.cluster import SphericalKMeans, write_clusters
from gpu_text.word2vec.huffman import HuffmanTree, huffman_tree
from gpu_text.word2vec.keyed_vectors import KeyedVectors, WordPairsScore, load_vectors
from gpu_text.word2vec.model import Word2Vec
from gpu_text.word2vec.vocabulary import EncodedCorpus, Vocabulary, build_vocabulary

__all__ = ["EncodedCorpus", "HuffmanTree", "KeyedVectors", "SphericalKMeans", "Vocabulary", "Word2Vec",
           "WordPairsScore", "build_vocabulary", "huffman_tree", "load_vectors", "write_clusters"]
