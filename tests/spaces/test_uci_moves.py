"""The UCI move vocabulary (:mod:`openenv_gym.spaces.uci_moves`) holds every move of real
games (never smaller than the game), and the match needs all of its facts."""

from __future__ import annotations

import random

import chess
import pytest

from openenv_gym.spaces.uci_moves import UCI_MOVE_SET, UCI_MOVES, is_fen, uci_move_field

ACTION = {"properties": {"action": {"type": "string"}}, "required": ["action"]}
START = chess.Board()
SAMPLE = {"board_state": {"fen": START.fen()}, "legal_moves": [m.uci() for m in START.legal_moves]}


def test_every_legal_move_of_random_games_is_in_the_vocabulary() -> None:
    rng = random.Random(0)
    seen = 0
    for variant in (chess.Board, lambda: chess.Board.from_chess960_pos(rng.randrange(960))):
        for _ in range(20):
            board = variant()
            while not board.is_game_over() and board.ply() < 300:
                moves = list(board.legal_moves)
                assert {m.uci() for m in moves} <= UCI_MOVE_SET
                seen += len(moves)
                board.push(rng.choice(moves))
    assert seen > 10_000
    assert len(UCI_MOVES) == len(UCI_MOVE_SET) == 4208  # no value twice


def test_promotions_to_every_piece_are_in_the_vocabulary() -> None:
    board = chess.Board("1n6/P7/8/8/8/8/7p/K1k4N w - - 0 1")
    moves = {m.uci() for m in board.legal_moves}
    assert {"a7a8q", "a7a8n", "a7b8r", "a7b8b"} <= moves <= UCI_MOVE_SET
    black = {m.uci() for m in chess.Board("k7/8/8/8/8/8/p7/1N5K b - - 0 1").legal_moves}
    assert {"a2a1q", "a2a1n", "a2b1r", "a2b1b"} <= black <= UCI_MOVE_SET


@pytest.mark.parametrize(
    ("action", "sample"),
    [
        (ACTION, {**SAMPLE, "board_state": {"fen": "not a position"}}),  # no FEN
        (ACTION, {"legal_moves": SAMPLE["legal_moves"]}),  # no FEN at all
        (ACTION, {**SAMPLE, "legal_moves": ["up", "down"]}),  # not UCI moves
        (ACTION, {**SAMPLE, "legal_moves": []}),  # says nothing
        ({"properties": {"action": {"type": "integer"}}, "required": ["action"]}, SAMPLE),
        ({"properties": {"action": {"type": "string", "enum": ["e2e4"]}}}, SAMPLE),
        ({**ACTION, "required": []}, SAMPLE),  # optional: the server's default applies
        ({"properties": {**ACTION["properties"], "note": {"type": "string"}}}, SAMPLE),
    ],
)
def test_no_match_without_every_fact(action: dict, sample: dict) -> None:
    assert uci_move_field(action, sample) is None


def test_the_match_takes_a_top_level_or_nested_fen() -> None:
    assert uci_move_field(ACTION, SAMPLE) == "action"
    flat = {"fen": START.fen(), "legal_moves": SAMPLE["legal_moves"]}
    assert uci_move_field(ACTION, flat) == "action"
    assert is_fen(START.fen())
    assert not is_fen("rnbqkbnr/pppppppp w")
