"""Answers with ``[N]`` citations from a multi-collection retrieval, through any LlamaIndex LLM.

Two ways in (SPEC R4, R5):

- :func:`answer` — for callers that already have a :class:`~rag_plugin.citations.ContextResult`
  (the portal's answer endpoint): prompts the LLM with the numbered context and returns the
  answer text, the footnotes it cites that exist, and the sources.
- :class:`RagQueryEngine` — a LlamaIndex ``BaseQueryEngine`` that retrieves with a
  :class:`~rag_plugin.retrieval.MultiCollectionRetriever`, builds the context and answers; its
  ``Response.source_nodes`` are in footnote order (node ``i`` is source ``[i + 1]``) and its
  metadata carries the sources, the cited footnotes and the context.

The LLM is any LlamaIndex ``LLM``; :func:`openai_compatible_llm` builds one for an
OpenAI-compatible chat completions endpoint (``llama-index-llms-openai-like``).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import RESPONSE_TYPE, Response, StreamingResponse
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.llms import LLM
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixinType
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag_plugin.citations import (
    DEFAULT_CONTEXT_SEPARATOR,
    DEFAULT_CONTEXT_TEMPLATE,
    ContextResult,
    Source,
    build_context_result,
    cited_footnotes,
    validate_context_template,
)
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.llama_index.retriever import chunk_to_node
from rag_plugin.retrieval import (
    CollectionRef,
    MultiCollectionRetriever,
    RetrievalProfile,
    RetrievedChunk,
)

__all__ = [
    "DEFAULT_ANSWER_PROMPT",
    "NO_CONTEXT",
    "AnswerResult",
    "RagQueryEngine",
    "answer",
    "answer_prompt",
    "answer_result",
    "openai_compatible_llm",
    "stream_answer",
]

DEFAULT_ANSWER_PROMPT = PromptTemplate(
    "Answer the question using only the numbered documents below.\n"
    "Cite every statement with the number of the document it comes from in square brackets, "
    "for example [1] or [2][3]. Do not cite documents that are not listed. If the documents "
    "do not contain the answer, say that you do not know.\n\n"
    "Documents:\n{context_str}\n\n"
    "Question: {query_str}\n"
    "Answer: "
)
"""The answer prompt; a replacement must use ``{context_str}`` and ``{query_str}``."""

NO_CONTEXT = "(no documents were found)"
"""What the prompt's document section says when retrieval found nothing."""


@dataclass(frozen=True, slots=True)
class AnswerResult:
    """An LLM's answer with the footnotes it cites and the sources they point to."""

    answer: str
    cited: tuple[int, ...]
    """The footnotes cited in the answer that exist in :attr:`sources`, in citation order."""
    sources: tuple[Source, ...]
    prompt: str
    """The prompt the LLM was given (for logs and tests)."""

    @property
    def cited_sources(self) -> tuple[Source, ...]:
        """The sources the answer cites, in citation order."""
        return tuple(self.sources[n - 1] for n in self.cited)


def answer(
    llm: LLM,
    query: str,
    context: ContextResult,
    *,
    prompt: BasePromptTemplate | str | None = None,
) -> AnswerResult:
    """Ask ``llm`` to answer ``query`` from ``context``, citing blocks as ``[N]``.

    Citations of numbers without a source (the model invented them) are left out of
    :attr:`AnswerResult.cited`; the answer text is returned as the model wrote it.
    """
    template, context_str = _prompt_parts(query, context, prompt)
    reply = llm.predict(template, context_str=context_str, query_str=query)
    return answer_result(reply, context, answer_prompt(query, context, prompt=template))


def answer_prompt(
    query: str, context: ContextResult, *, prompt: BasePromptTemplate | str | None = None
) -> str:
    """The text :func:`answer` gives the LLM for ``query`` and ``context``."""
    template, context_str = _prompt_parts(query, context, prompt)
    return template.format(context_str=context_str, query_str=query)


def stream_answer(
    llm: LLM,
    query: str,
    context: ContextResult,
    *,
    prompt: BasePromptTemplate | str | None = None,
) -> tuple[Iterator[str], Callable[[], AnswerResult]]:
    """Like :func:`answer`, streamed: the answer's text deltas as the LLM sends them, and a
    function that returns the :class:`AnswerResult` (with its citations) once they are read."""
    template, context_str = _prompt_parts(query, context, prompt)
    parts: list[str] = []

    def deltas() -> Iterator[str]:
        for delta in llm.stream(template, context_str=context_str, query_str=query):
            parts.append(delta)
            yield delta

    def result() -> AnswerResult:
        return answer_result(
            "".join(parts), context, answer_prompt(query, context, prompt=template)
        )

    return deltas(), result


def _prompt_parts(
    query: str, context: ContextResult, prompt: BasePromptTemplate | str | None
) -> tuple[BasePromptTemplate, str]:
    """The answer prompt and its context section; the question is checked first."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("The question is empty; pass some text to answer.")
    return _prompt(prompt), context.context if context.sources else NO_CONTEXT


def answer_result(reply: str, context: ContextResult, prompt: str) -> AnswerResult:
    """``reply`` with the footnotes it cites that exist in ``context`` (invented ones left out)."""
    cited = tuple(n for n in cited_footnotes(reply) if 1 <= n <= len(context.sources))
    return AnswerResult(answer=reply, cited=cited, sources=context.sources, prompt=prompt)


def openai_compatible_llm(
    api_base: str,
    model: str,
    *,
    api_key: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 2,
    context_window: int = 8192,
    **kwargs: Any,
) -> LLM:
    """An LLM for an OpenAI-compatible ``{api_base}/chat/completions`` endpoint.

    ``api_base`` includes the version path, e.g. ``http://127.0.0.1:8000/v1``. Servers that
    need no key get a placeholder, since the OpenAI client insists on one.
    """
    from llama_index.llms.openai_like import OpenAILike

    if not isinstance(api_base, str) or not api_base.strip():
        raise InvalidInputError(f"api_base must be a URL, got {api_base!r}.")
    if not isinstance(model, str) or not model.strip():
        raise InvalidInputError(f"model must be a model name, got {model!r}.")
    llm: LLM = OpenAILike(
        model=model,
        api_base=api_base.rstrip("/"),
        api_key=api_key or "not-needed",
        is_chat_model=True,
        is_function_calling_model=False,
        context_window=context_window,
        timeout=timeout,
        max_retries=max_retries,
        **kwargs,
    )
    return llm


class RagQueryEngine(BaseQueryEngine):
    """Retrieves from several collections, then answers with ``[N]`` citations.

    With ``streaming=True`` a query returns a ``StreamingResponse``: its ``response_gen``
    yields the answer as the LLM writes it, ``source_nodes`` and ``metadata["sources"]`` are
    there from the start, and ``metadata["cited"]`` is filled in when the stream ends.
    """

    def __init__(
        self,
        retriever: MultiCollectionRetriever,
        collections: Sequence[CollectionRef],
        llm: LLM,
        *,
        profile: RetrievalProfile | None = None,
        prompt: BasePromptTemplate | str | None = None,
        context_template: str = DEFAULT_CONTEXT_TEMPLATE,
        context_separator: str = DEFAULT_CONTEXT_SEPARATOR,
        streaming: bool = False,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        super().__init__(callback_manager)
        self.retriever = retriever
        self.collections = tuple(collections)
        self.llm = llm
        self.profile = profile if profile is not None else RetrievalProfile()
        self.prompt = _prompt(prompt)
        self.context_template = validate_context_template(context_template)
        self.context_separator = context_separator
        self.streaming = streaming

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        query = query_bundle.query_str
        chunks = self.retriever.retrieve(query, self.collections, self.profile)
        context = build_context_result(chunks, self.context_template, self.context_separator)
        metadata: dict[str, Any] = {
            "sources": [source.as_dict() for source in context.sources],
            "cited": [],
            "context": context.context,
        }
        nodes = [_node(chunk) for chunk in chunks]
        if self.streaming:
            deltas, finished = stream_answer(self.llm, query, context, prompt=self.prompt)

            def response_gen() -> Generator[str, None, None]:
                yield from deltas
                metadata["cited"] = list(finished().cited)

            return StreamingResponse(response_gen(), source_nodes=nodes, metadata=metadata)
        result = answer(self.llm, query, context, prompt=self.prompt)
        metadata["cited"] = list(result.cited)
        return Response(response=result.answer, source_nodes=nodes, metadata=metadata)

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        # Retrieval and the stores are synchronous; running them inline keeps one code path.
        return self._query(query_bundle)

    def _get_prompts(self) -> PromptDictType:
        return {"answer_prompt": self.prompt}

    def _update_prompts(self, prompts_dict: PromptDictType) -> None:
        if "answer_prompt" in prompts_dict:
            self.prompt = _prompt(prompts_dict["answer_prompt"])

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}


def _node(chunk: RetrievedChunk) -> NodeWithScore:
    node = chunk_to_node(chunk.chunk)
    node.metadata["collection"] = chunk.label
    return NodeWithScore(node=node, score=chunk.ranking_score)


def _prompt(prompt: BasePromptTemplate | str | None) -> BasePromptTemplate:
    template = PromptTemplate(prompt) if isinstance(prompt, str) else prompt
    if template is None:
        return DEFAULT_ANSWER_PROMPT
    missing = {"context_str", "query_str"} - set(template.template_vars)
    if missing:
        raise InvalidInputError(
            "The answer prompt must contain {context_str} and {query_str}; it lacks "
            + ", ".join("{" + name + "}" for name in sorted(missing))
            + "."
        )
    return template
