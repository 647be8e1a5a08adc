"""The workspace's forms: each field labelled, limited as the API limits the same value."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from rag_plugin.chunking import ChunkingStrategy
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.files import SUPPORTED_MEDIA_TYPES
from rag_plugin.rerank import RerankMode
from rag_plugin.search import SearchStrategy
from rag_plugin.stores.base import MAX_COLLECTION_NAME_LENGTH, validate_collection_name

STRATEGY_CHOICES = [("", "Default")] + [
    (strategy.value, strategy.value.replace("_", " ").capitalize()) for strategy in ChunkingStrategy
]
MAX_QUERY_CHARS = 2000
"""The longest query the search form takes, as the API's (``QueryField``)."""


class CollectionForm(forms.Form):
    name = forms.CharField(
        label="Name",
        max_length=MAX_COLLECTION_NAME_LENGTH,
        help_text="Letters, digits, _ and -. A tenant admin must have allowed the name.",
    )

    def clean_name(self) -> str:
        name = str(self.cleaned_data["name"]).strip()
        try:
            return validate_collection_name(name)
        except InvalidInputError as exc:
            raise forms.ValidationError(str(exc)) from None


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """One or more files from one ``<input type=file multiple>``."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput(attrs={"multiple": True}))
        super().__init__(**kwargs)

    def clean(self, data: Any, initial: Any = None) -> Any:
        files = data if isinstance(data, list | tuple) else [data]
        return [super(MultipleFileField, self).clean(file, initial) for file in files]


class UploadForm(forms.Form):
    prefix = "upload"  # its fields' names and ids differ from the paste form's beside it
    collection = forms.CharField(widget=forms.HiddenInput, max_length=MAX_COLLECTION_NAME_LENGTH)
    file = MultipleFileField(
        label="Files",
        help_text=(
            f"{', '.join(SUPPORTED_MEDIA_TYPES.values())}, told from their content; up to "
            f"{int(settings.RAG_FILES['MAX_FILES'])} files and "
            f"{int(settings.RAG_FILES['MAX_UPLOAD_BYTES']) // (1024 * 1024)} MiB in all."
        ),
    )
    chunking_strategy = forms.ChoiceField(
        label="Chunking", choices=STRATEGY_CHOICES, required=False
    )


class PasteForm(forms.Form):
    prefix = "paste"
    title = forms.CharField(label="Title", max_length=500, required=False)
    source = forms.CharField(
        label="Source",
        max_length=1000,
        required=False,
        help_text="Where the text comes from (a URL or a name); text sent again under the same "
        "source replaces it.",
    )
    content = forms.CharField(label="Text", widget=forms.Textarea(attrs={"rows": 8}))
    chunking_strategy = forms.ChoiceField(
        label="Chunking", choices=STRATEGY_CHOICES, required=False
    )


class SearchForm(forms.Form):
    """The search page's query and settings; the collections are the checked boxes."""

    q = forms.CharField(label="Search for", max_length=MAX_QUERY_CHARS)
    strategy = forms.ChoiceField(
        label="Strategy",
        choices=[(s.value, s.value.capitalize()) for s in SearchStrategy],
        initial=SearchStrategy.HYBRID.value,
        required=False,
    )
    correct_typos = forms.BooleanField(label="Correct typos", required=False)
    rerank = forms.ChoiceField(
        label="Rerank",
        choices=[(mode.value, mode.value.capitalize()) for mode in RerankMode],
        initial=RerankMode.OFF.value,
        required=False,
    )
    tag = forms.CharField(label="Tag", max_length=100, required=False)
    key = forms.CharField(label="Metadata key", max_length=256, required=False)
    value = forms.CharField(label="Metadata value", max_length=1000, required=False)
    limit = forms.IntegerField(
        label="Results", min_value=1, max_value=50, initial=10, required=False
    )

    def clean_q(self) -> str:
        query = str(self.cleaned_data["q"]).strip()
        most = int(settings.RAG_API["MAX_QUERY_WORDS"])
        if len(query.split()) > most:
            raise forms.ValidationError(
                f"The query has {len(query.split())} words; the limit is {most}."
            )
        return query

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if bool(cleaned.get("key")) != bool(cleaned.get("value")):
            raise forms.ValidationError("Give both a metadata key and its value, or neither.")
        return cleaned
