"""Megatron-LM training on ``ocml pack --output megatron`` (unpacked) with ocml's loss mask.

Megatron-LM's stock ``GPTDataset`` reads only the ids (``<shard>_text_document``) and trains
every token.  ``MaskedGPTDataset`` is that dataset plus ocml's mask: each sample is drawn from
the ids exactly as ``GPTDataset`` draws it (same document, sample and shuffle indices), the
same span is read from the mask dataset beside it (``<shard>_loss_mask_document``, aligned
with the ids), and the sample's ``loss_mask`` keeps a target only where ocml trains it
(label ``k`` is token ``k + 1``; Megatron's own zeros, padding and ``eod_mask_loss``, stay).

Use it where Megatron-LM builds its datasets (``pretrain_gpt.py``'s
``train_valid_test_datasets_provider``):
``BlendedMegatronDatasetBuilder(MaskedGPTDataset, sizes, is_built_on_rank, config).build()``
in place of ``GPTDataset``, with ``--data-path DIR/megatron/train-00000_text_document ...``.
Needs megatron-core (imported when this module is).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from megatron.core.datasets.gpt_dataset import GPTDataset
from megatron.core.datasets.indexed_dataset import IndexedDataset

from ..pipeline.megatron import IDS_KEY, MASK_KEY


def mask_prefix(ids_prefix: str) -> str:
    """``.../train-00000_loss_mask_document`` for ``.../train-00000_text_document``."""
    if not ids_prefix.endswith(IDS_KEY):
        from ..errors import InputError

        raise InputError(f"{ids_prefix!r} is not an ocml ids dataset (…_{IDS_KEY})", field="dataset_path",
                         hint=f"pass DIR/megatron/train-NNNNN_{IDS_KEY} from ocml pack --output megatron")
    return ids_prefix[: -len(IDS_KEY)] + MASK_KEY


class MaskedGPTDataset(GPTDataset):  # type: ignore[misc]  # megatron-core has no type information
    """``GPTDataset`` whose ``loss_mask`` is ocml's (see the module docstring)."""

    def __init__(self, indexed_dataset: Any, dataset_path: str | None, *args: Any, **kwargs: Any) -> None:
        super().__init__(indexed_dataset, dataset_path, *args, **kwargs)
        self.mask_dataset = IndexedDataset(mask_prefix(str(dataset_path)), mmap=self.config.mmap_bin_files)
        if not np.array_equal(self.mask_dataset.sequence_lengths, indexed_dataset.sequence_lengths):
            from ..errors import InputError

            raise InputError(f"{mask_prefix(str(dataset_path))} does not match its ids dataset", field="dataset_path",
                             hint="use the ids and mask pair of one ocml pack run")

    def __getitem__(self, idx: int | None) -> dict[str, torch.Tensor]:
        out: dict[str, torch.Tensor] = super().__getitem__(idx)
        ids, self.dataset = self.dataset, self.mask_dataset  # type: ignore[has-type]  # megatron's untyped attribute
        try:  # the same span of the mask dataset (GPTDataset reads its samples from self.dataset)
            mask, _ = self._query_document_sample_shuffle_indices(0 if idx is None else idx)
        finally:
            self.dataset = ids
        trained = torch.from_numpy(mask == 1)
        target = trained[1:] if self.config.add_extra_token_to_sequence else torch.roll(trained, -1)
        if not self.config.add_extra_token_to_sequence:
            target[-1] = False
        out["loss_mask"] = out["loss_mask"] * target[: out["loss_mask"].shape[0]].to(out["loss_mask"].dtype)
        return out
