"""The steady step: every reply a plain batch result, taken in one pass.

Most steps of a training run are alike: each batch connection answers every one of its
sessions with a ``batch_result`` that has no error, no episode reset in the same round trip
(``final``), observations stacked into one array, flag columns of booleans, and info fields
and ``metadata`` with the same keys in every row.
:meth:`~openenv_gym.vector.buffers.BatchBuffers.take_steps` handles every reply there can
be, row by row and key by key; half of the client's share of a preprocessed Pong step (N=8,
two server workers) went to that generality. A :class:`SteadyStep` takes such a step whole
instead:

* it reads every reply's message and checks that each is a plain result (anything else,
  and nothing is written: the general path takes the step, errors and notes included);
* it builds each info key's column once for all sub-envs (what ``VectorEnv._add_info``
  gives, as :mod:`openenv_gym.vector.infos` does), then writes observations, rewards, flags,
  step counts and legal actions with one numpy assignment each.

The result is the general path's, value for value (``tests/vector/test_steady_step.py``
steps both side by side on real servers). It runs where every reply of a round trip is
read before any is decoded anyway (one connection, or workers that fill the client's cores:
:meth:`~openenv_gym.vector.connections.Connections.receive_at_once`); replies from many
servers are still taken as each comes, while the later servers step. A vector env whose replies
are seldom plain (dict infos, rows with other keys) stops trying after
:data:`GIVE_UP_AFTER` declined steps in a row, so it does not read its messages twice, and
tries again :data:`RETRY_AFTER` steps later.

Example:
    >>> import numpy as np
    >>> info_column([3, 1, 2])
    array([3, 1, 2])
    >>> info_column(["pong", "pong"])
    array(['pong', 'pong'], dtype=object)
    >>> info_column([{"nested": 1}]) is None  # nested dicts: the general path
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import is_
from typing import Any, Final, NamedTuple
from weakref import WeakKeyDictionary

import numpy as np

from openenv_gym.spaces import ObservationCodec
from openenv_gym.vector.buffers import BatchBuffers
from openenv_gym.vector.channels import BatchChannel, Channel
from openenv_gym.vector.compact_step import CompactStep
from openenv_gym.vector.infos import full_column, row_index
from openenv_gym.wire.batch import BATCH_RESULT
from openenv_gym.wire.compact_reader import TYPED

#: Declined steps in a row after which a vector env stops trying the steady step.
GIVE_UP_AFTER: Final = 8
#: Steps that go the general way, once it stopped trying, before it tries again.
RETRY_AFTER: Final = 1000
_METADATA: Final = "metadata"
_BOOL_ONLY: Final = frozenset({bool})
_NUMBERS: Final = frozenset({float, int})
_DICT_ONLY: Final = frozenset({dict})


def info_column(values: Sequence[Any]) -> np.ndarray | None:
    """The info column of one value per sub-env, every sub-env in order, as
    ``VectorEnv._add_info`` fills it (:func:`~openenv_gym.vector.infos.full_column`);
    ``None`` where that takes the general path (nested dicts, numbers of mixed types)."""
    return full_column(values, len(values))


class SteadyStep:
    """Takes a round trip whose replies are all plain batch results (module docstring).

    Args:
        buffers: The vector env's batch buffers.
    """

    def __init__(self, buffers: BatchBuffers) -> None:
        self.buffers = buffers
        codec = buffers.codec
        self._key: str = codec.key or ""
        self._legal_key = codec.legal_key
        #: The flag fields a reply may carry: truncated, then the exact terminated.
        self._flag_keys = tuple(k for k in (codec.truncated_key, codec.terminated_key) if k)
        self._quiet = buffers.quiet_fields
        self._every = list(range(buffers.num_envs))
        # What the last steps built, reused while the server repeats their sources
        # (:mod:`openenv_gym.wire.repeated_columns` puts back the same objects): each
        # channel's metadata columns, and each info key's column (handed out as copies).
        self._metadata: WeakKeyDictionary[Channel, tuple[Any, dict[str, list[Any]]]] = (
            WeakKeyDictionary()
        )
        self._columns: dict[str, tuple[tuple[list[Any], ...], np.ndarray]] = {}
        self._declined = 0
        #: The steps of compact frames, compiled for their announcements (or ``None``).
        self._compact: CompactStep | None = None
        #: The announcements the last compile was for.
        self._compiled_for: list[Any] = []
        #: Steps this path took (the rest went the general way), and those of them written
        #: straight from compact frames.
        self.taken = 0
        self.compact_taken = 0

    @staticmethod
    def supports(buffers: BatchBuffers) -> bool:
        """Whether a vector env with these buffers can take steady steps: a Box-like space
        of one field, no truncation rule read from observations, info fields beside it."""
        codec: ObservationCodec = buffers.codec
        return (
            buffers.stacked
            and codec.key is not None
            and codec.plain_extras
            and not codec.truncation_rule
        )

    def worth_trying(self) -> bool:
        """Whether to read the next round trip as a steady step: not after
        :data:`GIVE_UP_AFTER` declined steps in a row, until :data:`RETRY_AFTER` steps
        have gone the general way (the replies may have settled by then)."""
        if self._declined < GIVE_UP_AFTER:
            return True
        self._declined += 1
        if self._declined >= GIVE_UP_AFTER + RETRY_AFTER:
            self._declined = GIVE_UP_AFTER - 1  # one more try
        return False

    def take(self, channels: Sequence[Channel], raws: Sequence[Any]) -> dict[str, Any] | None:
        """Write the step of ``raws`` (one reply per channel, in order) and return its infos;
        ``None`` when a reply is not a plain result (nothing written: the general path
        takes them, and raises what they say)."""
        if not raws:
            return None  # nothing stepped: nothing to take (not a decline)
        compact = self._compact
        if compact is not None:
            infos = compact.take(channels, raws)
            if infos is not None:
                self._declined = 0
                self.taken += 1
                self.compact_taken += 1
                return infos
        parts: list[_Part] = []
        step = None
        try:
            for channel, raw in zip(channels, raws, strict=True):
                part = self._part(channel, raw)
                if part is None:
                    break
                parts.append(part)
            else:
                step = self._join(parts)
        except Exception:  # a malformed reply: the general path reads it again, and raises
            step = None
        if step is None:
            self._declined += 1
            return None
        self._declined = 0
        self.taken += 1
        infos = self._write(parts, *step)
        if all(p.typed for p in parts):  # compact frames: compile them for the next steps
            announced = [getattr(c, "announcement", None) for c in channels]
            last = self._compiled_for
            if len(last) != len(announced) or not all(map(is_, last, announced)):
                # Once per set of announcements, compiled or not (a failed compile would
                # otherwise be tried again at every step they stand on).
                self._compiled_for = announced
                self._compact = CompactStep.compile(self.buffers, channels, infos)
        return infos

    def _part(self, channel: Channel, raw: Any) -> _Part | None:
        """One reply read and checked: ``None`` when it is not a plain result.

        Raises:
            OpenEnvGymError: The frame cannot be read, or the observations are not in the
                space (the step declines; the general path raises it with its notes).
        """
        if not isinstance(channel, BatchChannel) or not isinstance(raw, bytes | str):
            return None
        message = channel.load(raw)
        data = message.get("data") if type(message) is dict else None
        if message.get("type") != BATCH_RESULT or type(data) is not dict or data.get("final"):
            return None
        indices = channel.indices
        count = len(indices)
        fields, reward, done = data["observation"], data["reward"], data["done"]
        # A compact frame's numbers are arrays of their type and length already.
        typed: list[str] = data.get(TYPED) or []
        if (
            data["indices"] != channel.every_session
            or type(fields) is not dict
            or _METADATA in fields
            or not {count}.issuperset(map(len, fields.values()))
        ):
            return None
        if not typed and (
            type(reward) is not list
            or type(done) is not list
            or len(reward) != count
            or len(done) != count
            or not _NUMBERS.issuperset(map(type, reward))
            or not _BOOL_ONLY.issuperset(map(type, done))
        ):
            return None
        key = self._key
        stacked = fields.get(key)
        if not isinstance(stacked, np.ndarray) or stacked.shape[:1] != (count,):
            return None
        columns: dict[str, list[Any]] = {}
        for name, column in fields.items():
            if name not in self._quiet:
                if type(column) is not list and name not in typed:
                    return None  # a numeric array beside the observation: general path
                columns[name] = column
        metadata = data.get(_METADATA)
        known = self._metadata.get(channel)
        if known is not None and known[0] is metadata:  # repeated: the last reply's object
            columns.update(known[1])
        else:
            extra: dict[str, list[Any]] = {}
            if not _add_metadata(extra, metadata, channel.every_key):
                return None
            columns.update(extra)
            self._metadata[channel] = (metadata, extra)
        flags = [fields.get(name) for name in self._flag_keys]
        for name, column in zip(self._flag_keys, flags, strict=True):
            if column is not None and not (
                (type(column) is list and _BOOL_ONLY.issuperset(map(type, column)))
                or (name in typed and column.dtype == np.bool_)
            ):
                return None
        decoded = self.buffers.codec.decode_batch({key: stacked}, count)
        legal = fields.get(self._legal_key) if self._legal_key is not None else None
        return _Part(indices, decoded, reward, done, columns, flags, legal, bool(typed))

    def _join(self, parts: list[_Part]) -> tuple[Any, ...] | None:
        """The step's rows in reply order, rewards, flags, step counts and info columns;
        ``None`` when the replies differ in their keys or flags, a value takes the
        general path, or (SAME_STEP) an episode ended without its server resetting it."""
        buffers = self.buffers
        first = parts[0]
        keys = list(first.columns)
        if any(list(p.columns) != keys or _sent(p.flags) != _sent(first.flags) for p in parts):
            return None
        order, reward, done, columns = first.indices, first.reward, first.done, first.columns
        for more in parts[1:]:  # joined pairwise: one server's two workers in one go
            order = order + more.indices
            reward, done = _joined(reward, more.reward), _joined(done, more.done)
            columns = {
                name: _joined(values, more.columns[name]) for name, values in columns.items()
            }
        rows: Any = slice(None) if order == self._every else order
        if rows is order and sorted(order) != self._every:
            return None  # not every sub-env stepped (a pool's subset): the general path
        infos: dict[str, np.ndarray] = {}
        known = self._columns
        for name, values in columns.items():
            if type(values) is np.ndarray:  # a compact frame's numbers: new every step
                infos[name] = values
                continue
            sources = tuple([p.columns[name] for p in parts])
            last = known.get(name)
            if (
                last is not None
                and len(last[0]) == len(sources)
                and all(map(is_, last[0], sources))
            ):
                infos[name] = last[1]  # every reply repeated it: last step's column
                continue
            column = info_column(values)
            if column is None:
                return None
            infos[name] = column
            known[name] = (sources, column)
        elapsed = buffers.elapsed[rows] + 1
        terminated, truncated, ended = self._flags(parts, done, elapsed)
        if ended and buffers.same_step:
            return None
        return rows, reward, terminated, truncated, elapsed, ended, infos

    def _flags(
        self, parts: list[_Part], done: list[bool], elapsed: np.ndarray
    ) -> tuple[Any, Any, bool]:
        """Terminated and truncated as the general path sets them (lists, or arrays with a
        client-side time limit), and whether an episode ended: the server's truncated flag
        or the time limit truncates; the server's exact terminated flag wins, else done
        and not truncated."""
        count = len(done)
        sent: dict[str | None, list[bool]] = {}
        for k, name in enumerate(self._flag_keys):
            sent[name] = [f for p in parts if p.flags[k] is not None for f in p.flags[k]]
        codec = self.buffers.codec
        truncated_column = sent.get(codec.truncated_key)
        terminated_column = sent.get(codec.terminated_key)
        limit = self.buffers.max_episode_steps
        if limit is None:  # plain lists: no numpy for a few flags
            truncated: Any = truncated_column if truncated_column else [False] * count
            if terminated_column:
                terminated: Any = terminated_column
            elif truncated_column:
                terminated = [d and not t for d, t in zip(done, truncated_column, strict=True)]
            else:
                terminated = done
            return terminated, truncated, True in terminated or True in truncated
        truncated = (
            np.array(truncated_column, np.bool_) if truncated_column else np.zeros(count, np.bool_)
        )
        truncated |= elapsed >= limit
        if terminated_column:
            terminated = np.array(terminated_column, np.bool_)
        else:
            terminated = np.array(done, np.bool_) & ~truncated
        return terminated, truncated, bool(terminated.any() or truncated.any())

    def _write(
        self,
        parts: list[_Part],
        rows: Any,
        reward: list[float],
        terminated: Any,
        truncated: Any,
        elapsed: np.ndarray,
        ended: bool,
        infos: dict[str, np.ndarray],
    ) -> dict[str, Any]:
        """Write the step into the buffers; its infos, with their masks."""
        buffers = self.buffers
        for part in parts:
            buffers.observations[row_index(part.indices)] = part.decoded
            if part.legal is not None:
                for i, value in zip(part.indices, part.legal, strict=True):
                    buffers.legal[i] = value
        buffers.rewards[rows] = reward
        buffers.elapsed[rows] = elapsed
        buffers.terminations[rows] = terminated
        buffers.truncations[rows] = truncated
        if ended:
            buffers.note_ended()
        merged: dict[str, Any] = {}
        mask = np.ones(buffers.num_envs, dtype=np.bool_)
        known = self._columns
        for name, column in infos.items():
            if type(rows) is slice:
                if name in known and column is known[name][1]:
                    column = column.copy()  # the one built stays for the next step
            else:  # the replies' order is not the sub-envs': a new column in theirs
                placed = np.empty_like(column)
                placed[rows] = column
                column = placed
            merged[name], merged["_" + name] = column, mask.copy()
        return merged


class _Part(NamedTuple):
    """One reply of a steady step."""

    indices: list[int]
    decoded: Any
    reward: Any  # a list, or a compact frame's array
    done: Any
    columns: dict[str, Any]
    flags: list[Any]
    legal: list[Any] | None
    #: It came as a compact frame.
    typed: bool


def _joined(first: Any, second: Any) -> Any:
    """Two replies' values of one column in order: lists joined, a compact frame's arrays
    of one dtype concatenated (else lists, as full frames have them: ints beside floats
    are not one column's numbers, and go the general way as they would from full frames).

    Example:
        >>> _joined([1], [2]), _joined(np.array([1]), np.array([2])), _joined([1], np.array([2]))
        ([1, 2], array([1, 2]), [1, 2])
        >>> _joined(np.array([1]), np.array([2.5]))
        [1, 2.5]
    """
    if type(first) is list and type(second) is list:
        return first + second
    if type(first) is np.ndarray and type(second) is np.ndarray and first.dtype == second.dtype:
        return np.concatenate((first, second))
    as_list = [v.tolist() if type(v) is np.ndarray else v for v in (first, second)]
    return as_list[0] + as_list[1]


def _sent(flags: list[Any]) -> list[bool]:
    """Which flag fields a reply sent."""
    return [f is not None for f in flags]


def _add_metadata(part: dict[str, list[Any]], metadata: Any, positions: list[str]) -> bool:
    """Add the ``metadata`` keys' columns to ``part`` (a metadata key wins over a field of
    the same name, as in a single env's info); whether every row (``positions``, as the
    wire names them) had the same keys.

    Example:
        >>> part = {"lives": [3, 3]}
        >>> _add_metadata(part, {"0": {"game": "pong"}, "1": {"game": "pong"}}, ["0", "1"])
        True
        >>> part
        {'lives': [3, 3], 'game': ['pong', 'pong']}
        >>> _add_metadata({}, {"0": {"game": "pong"}}, ["0", "1"])  # row 1 has none
        False
    """
    if metadata is None or metadata == {}:
        return True
    if type(metadata) is not dict or list(metadata) != positions:
        return False
    rows = list(metadata.values())
    if not _DICT_ONLY.issuperset(map(type, rows)):
        return False
    keys = rows[0].keys()
    for row in rows:
        if row.keys() != keys:
            return False
    for name in keys:
        part[name] = [row[name] for row in rows]
    return True


__all__ = ["GIVE_UP_AFTER", "RETRY_AFTER", "SteadyStep", "info_column"]
