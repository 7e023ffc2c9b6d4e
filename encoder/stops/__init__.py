"""What a sampler stops on, and the samplers' own spellings of it: the public ``ocml.stops``.

One module per job, gathered here (the documented path, ``ocml.stops.X`` / ``ocml.encoder.stops.X``):

- ``ids``: the format's stop controls, their ids and (fallback mode) strings, where a turn stops;
- ``vllm``: ``SamplingParams`` keyword arguments;
- ``hf_criteria``: a transformers ``StoppingCriteria``;
- ``ocml.encoder.stream.hf_streamer``: a transformers streamer reading the generated ids;
- ``ocml.encoder.stream.engine_stop``: how a stop the engine stripped ends a stream.
"""

from __future__ import annotations

from ..stream.engine_stop import EngineStop, engine_stop
from ..stream.hf_streamer import hf_streamer
from .hf_criteria import hf_stopping_criteria
from .ids import first_stop, stop_ids, stop_strings, stop_tokens
from .vllm import vllm_sampling_kwargs

__all__ = ["EngineStop", "engine_stop", "first_stop", "hf_stopping_criteria", "hf_streamer", "stop_ids",
           "stop_strings", "stop_tokens", "vllm_sampling_kwargs"]
