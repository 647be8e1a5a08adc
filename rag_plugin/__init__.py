"""rag_plugin: chunking, dedup embedding, hybrid BM25 + fuzzy + dense search for LlamaIndex.

Everything public is importable from here; the modules themselves are the implementation.
"""

from rag_plugin.chunking import (
    API_CHUNKERS,
    Chunk,
    ChunkerConfig,
    ChunkingStrategy,
    TextChunker,
    api_chunker_config,
)
from rag_plugin.citations import (
    ContextResult,
    Source,
    build_context,
    build_context_result,
    build_sources,
    cited_footnotes,
)
from rag_plugin.embedding import (
    BUNDLED_MODEL,
    DEFAULT_MODEL,
    DedupPlan,
    Embedder,
    EmbedderStats,
    EmbeddingCache,
    FastEmbedEmbedder,
    HttpEmbedder,
    InMemoryEmbeddingCache,
    SqliteEmbeddingCache,
    content_hash_hex,
    normalize_for_dedup,
)
from rag_plugin.engine import (
    CollectionSearcher,
    SearchHit,
    SearchOutcome,
)
from rag_plugin.exceptions import (
    CollectionExistsError,
    CollectionNotFoundError,
    ConfigurationError,
    DimensionMismatch,
    DimensionMismatchError,
    DocumentNotFoundError,
    EmbeddingError,
    InvalidInputError,
    InvalidVectorError,
    ModelLoadError,
    NotFoundError,
    RagError,
    StoreError,
)
from rag_plugin.filters import (
    FilterCondition,
    FilterGroup,
    FilterOperator,
    Filters,
    MetadataFilter,
)
from rag_plugin.fusion import (
    DEFAULT_RRF_K,
    SEED_RRF_K,
    SEED_WEIGHTS,
    HybridWeights,
    RrfFusion,
    SearchResult,
    rank_results,
    score_normalization,
)
from rag_plugin.ingest import (
    DEFAULT_COLLECTION_ANALYZER,
    IngestResult,
    StoredSource,
    get_or_create_collection,
    ingest_text,
    ingest_texts,
    planned_collection,
)
from rag_plugin.lexical.analyzers import (
    Analyzer,
    get_analyzer,
    tokenize,
)
from rag_plugin.lexical.bm25 import Bm25Index
from rag_plugin.lexical.correction import (
    Correction,
    QueryCorrection,
)
from rag_plugin.lexical.expansion import QueryExpander
from rag_plugin.lexical.fuzzy import (
    FuzzyIndex,
    levenshtein,
)
from rag_plugin.llama_index.embedding import RagEmbedding
from rag_plugin.llama_index.node_parser import RagChunkNodeParser
from rag_plugin.llama_index.query_engine import (
    AnswerResult,
    RagQueryEngine,
    answer,
    openai_compatible_llm,
)
from rag_plugin.llama_index.retriever import RagRetriever
from rag_plugin.llama_index.vector_store import RagVectorStore
from rag_plugin.rerank import (
    CrossEncoderReranker,
    LexicalReranker,
    NoReranker,
    Reranker,
    make_reranker,
)
from rag_plugin.retrieval import (
    CollectionRef,
    MultiCollectionRetriever,
    RetrievalProfile,
    RetrievalResult,
    RetrievedChunk,
)
from rag_plugin.search import (
    SearchEngine,
    SearchStrategy,
)
from rag_plugin.stores.base import (
    ChunkInput,
    ChunkRecord,
    CollectionInfo,
    CollectionKey,
    DocumentInput,
    DocumentRecord,
    ScoredChunk,
    Store,
    validate_collection_name,
)
from rag_plugin.stores.memory import MemoryStore
from rag_plugin.stores.postgres import (
    PostgresEmbeddingCache,
    PostgresStore,
)
from rag_plugin.vectors import (
    DistanceMetric,
    cosine_distance,
    cosine_similarity,
    distance_to_similarity,
    normalize_embedding,
    validate_embedding,
)

__all__ = [
    "API_CHUNKERS",
    "BUNDLED_MODEL",
    "DEFAULT_COLLECTION_ANALYZER",
    "DEFAULT_MODEL",
    "DEFAULT_RRF_K",
    "SEED_RRF_K",
    "SEED_WEIGHTS",
    "Analyzer",
    "AnswerResult",
    "Bm25Index",
    "Chunk",
    "ChunkInput",
    "ChunkRecord",
    "ChunkerConfig",
    "ChunkingStrategy",
    "CollectionExistsError",
    "CollectionInfo",
    "CollectionKey",
    "CollectionNotFoundError",
    "CollectionRef",
    "CollectionSearcher",
    "ConfigurationError",
    "ContextResult",
    "Correction",
    "CrossEncoderReranker",
    "DedupPlan",
    "DimensionMismatch",
    "DimensionMismatchError",
    "DistanceMetric",
    "DocumentInput",
    "DocumentNotFoundError",
    "DocumentRecord",
    "Embedder",
    "EmbedderStats",
    "EmbeddingCache",
    "EmbeddingError",
    "FastEmbedEmbedder",
    "FilterCondition",
    "FilterGroup",
    "FilterOperator",
    "Filters",
    "FuzzyIndex",
    "HttpEmbedder",
    "HybridWeights",
    "InMemoryEmbeddingCache",
    "IngestResult",
    "InvalidInputError",
    "InvalidVectorError",
    "LexicalReranker",
    "MemoryStore",
    "MetadataFilter",
    "ModelLoadError",
    "MultiCollectionRetriever",
    "NoReranker",
    "NotFoundError",
    "PostgresEmbeddingCache",
    "PostgresStore",
    "QueryCorrection",
    "QueryExpander",
    "RagChunkNodeParser",
    "RagEmbedding",
    "RagError",
    "RagQueryEngine",
    "RagRetriever",
    "RagVectorStore",
    "Reranker",
    "RetrievalProfile",
    "RetrievalResult",
    "RetrievedChunk",
    "RrfFusion",
    "ScoredChunk",
    "SearchEngine",
    "SearchHit",
    "SearchOutcome",
    "SearchResult",
    "SearchStrategy",
    "Source",
    "SqliteEmbeddingCache",
    "Store",
    "StoreError",
    "StoredSource",
    "TextChunker",
    "answer",
    "api_chunker_config",
    "build_context",
    "build_context_result",
    "build_sources",
    "cited_footnotes",
    "content_hash_hex",
    "cosine_distance",
    "cosine_similarity",
    "distance_to_similarity",
    "get_analyzer",
    "get_or_create_collection",
    "ingest_text",
    "ingest_texts",
    "levenshtein",
    "make_reranker",
    "normalize_embedding",
    "normalize_for_dedup",
    "openai_compatible_llm",
    "planned_collection",
    "rank_results",
    "score_normalization",
    "tokenize",
    "validate_collection_name",
    "validate_embedding",
]
