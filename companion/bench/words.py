"""The words of the benchmark tables (:mod:`companion.bench.tables`) in each language: the
Japanese edition's labels for the results' names, counts ("29 of 33": 「33 個中 29 個」),
environments, seconds and "not reached"."""

from __future__ import annotations

import re
from typing import Any

#: The languages a table can be written in: English, and the Japanese edition's.
LANGUAGES = ("en", "ja")

POST_TASKS = {
    "post-medium": "post's maze, 4 pairs",
    "post-medium-9": "post's maze, 9 pairs",
    "book-medium": "book's maze, 9 pairs",
}
POST_TASKS_JA = {
    "post-medium": "記事の迷路（4 組）",
    "post-medium-9": "記事の迷路（9 組）",
    "book-medium": "本書の迷路（9 組）",
}
#: Row labels the results hold (a benchmark's variant or configuration), in Japanese; a label
#: not listed here is shown as the result names it.
LABELS_JA = {
    "post": "記事",
    "book": "本書",
    "this book": "本書",
    "the post": "記事",
    # source_posts: the post's PPO with one change, and its DQN with CartPole-v1's rules
    "mask fixed (-inf in the loss)": "マスクを修正（損失で -inf）",
    "value broadcast fixed": "価値のブロードキャストを修正",
    "all 9 pairs drawn": "9 組すべてを引く",
    "post on the book's medium maze": "記事のエージェント（本書の medium 迷路で学習）",
    "CartPole-v1 reward and truncation": "CartPole-v1 の報酬と打ち切り",
    # dqn_stability: chapter 7's configuration and each lever taken away
    "chapter": "第 7 章の設定",
    "without LayerNorm": "LayerNorm なし",
    "1 gradient step per iteration": "反復ごとに 1 勾配ステップ",
    "batch 64": "バッチサイズ 64",
    "constant learning rate": "一定の学習率",
    "Polyak τ = 0.005 every step": "毎ステップ τ = 0.005 の Polyak 平均",
    "buffer 10,000": "10,000 遷移のバッファ",
    # dqn_stability's grid: the target networks
    "no target network": "ターゲットネットワークなし",
    "copy every 10": "10 ステップごとにコピー",
    "copy every 200": "200 ステップごとにコピー",
    "Polyak, lag of a copy every 10": "Polyak 平均（10 ステップごとのコピーと同じ遅れ）",
    "Polyak, lag of a copy every 200": "Polyak 平均（200 ステップごとのコピーと同じ遅れ）",
}


def _check_language(language: Any) -> str:
    if language not in LANGUAGES:
        raise ValueError(f"language: expected one of {LANGUAGES}, got {language!r}")
    return language


def _label(text: str, language: str) -> str:
    return LABELS_JA.get(text, text) if language == "ja" else text


def _tasks(language: str) -> dict:
    return POST_TASKS_JA if language == "ja" else POST_TASKS


def _of(k: Any, n: Any, language: str) -> str:
    """``"k of n"`` (``"n 個中 k 個"``)."""
    return f"{n} 個中 {k} 個" if language == "ja" else f"{k} of {n}"


def _of_text(text: Any, language: str) -> str:
    """A result's ``"k of n"`` in ``language``."""
    found = re.fullmatch(r"(\d+) of (\d+)", str(text))
    return _of(found.group(1), found.group(2), language) if found else str(text)


def _not_reached(language: str) -> str:
    return "未到達" if language == "ja" else "not reached"


def _count(value: Any, language: str, fmt: str = "{:,}") -> str:
    return _not_reached(language) if value is None else fmt.format(value)


def _envs(n: Any, language: str) -> str:
    if language == "ja":
        return f"{n} 環境"
    return f"{n} env" if str(n) == "1" else f"{n} envs"


def _seconds(value: Any, language: str) -> str:
    return _not_reached(language) if value is None else f"{value:.1f}"
