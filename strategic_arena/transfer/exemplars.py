"""Few-shot exemplars, as data: GSM8K's standard eight chain-of-thought exemplars.

Source: Wei et al., 2022, "Chain-of-Thought Prompting Elicits Reasoning in Large Language
Models" (NeurIPS 2022), its appendix of full prompts: the eight math word problems with
written-out reasoning that became the standard 8-shot chain-of-thought prompt for GSM8K
(lm-eval's ``gsm8k_cot`` uses the same set). Each entry keeps the question and the reasoning
as the paper writes them, and the final answer apart; :mod:`.fewshot` writes the answer at the
end of the reasoning in the form the project's prompts ask for (boxed).

No paper this project reproduces states its own exemplars (SPIRAL gives base models "few-shot
examples that follow the Qwen3 Report settings" and prints none), so these are the exemplars of
every benchmark (docs/transfer.md, "Few-shot evaluation").
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GSM8K_COT", "GSM8K_COT_SOURCE", "Exemplar"]


@dataclass(frozen=True)
class Exemplar:
    """One worked example.

    Attributes:
        question: the problem as the source writes it.
        reasoning: the source's chain of thought, without its final answer sentence.
        answer: the final answer.
    """

    question: str
    reasoning: str
    answer: str


GSM8K_COT_SOURCE = (
    "Wei et al., 2022, Chain-of-Thought Prompting Elicits Reasoning in Large Language Models, "
    "the full prompt for math word problems (GSM8K's standard 8-shot chain-of-thought exemplars)"
)

#: The eight exemplars, in the source's order.
GSM8K_COT: tuple[Exemplar, ...] = (
    Exemplar(
        "There are 15 trees in the grove. Grove workers will plant trees in the grove today. "
        "After they are done, there will be 21 trees. How many trees did the grove workers "
        "plant today?",
        "There are 15 trees originally. Then there were 21 trees after some more were planted. "
        "So there must have been 21 - 15 = 6.",
        "6",
    ),
    Exemplar(
        "If there are 3 cars in the parking lot and 2 more cars arrive, how many cars are in "
        "the parking lot?",
        "There are originally 3 cars. 2 more cars arrive. 3 + 2 = 5.",
        "5",
    ),
    Exemplar(
        "Leah had 32 chocolates and her sister had 42. If they ate 35, how many pieces do they "
        "have left in total?",
        "Originally, Leah had 32 chocolates. Her sister had 42. So in total they had "
        "32 + 42 = 74. After eating 35, they had 74 - 35 = 39.",
        "39",
    ),
    Exemplar(
        "Jason had 20 lollipops. He gave Denny some lollipops. Now Jason has 12 lollipops. How "
        "many lollipops did Jason give to Denny?",
        "Jason started with 20 lollipops. Then he had 12 after giving some to Denny. So he gave "
        "Denny 20 - 12 = 8.",
        "8",
    ),
    Exemplar(
        "Shawn has five toys. For Christmas, he got two toys each from his mom and dad. How "
        "many toys does he have now?",
        "Shawn started with 5 toys. If he got 2 toys each from his mom and dad, then that is 4 "
        "more toys. 5 + 4 = 9.",
        "9",
    ),
    Exemplar(
        "There were nine computers in the server room. Five more computers were installed each "
        "day, from monday to thursday. How many computers are now in the server room?",
        "There were originally 9 computers. For each of 4 days, 5 more computers were added. So "
        "5 * 4 = 20 computers were added. 9 + 20 is 29.",
        "29",
    ),
    Exemplar(
        "Michael had 58 golf balls. On tuesday, he lost 23 golf balls. On wednesday, he lost 2 "
        "more. How many golf balls did he have at the end of wednesday?",
        "Michael started with 58 golf balls. After losing 23 on tuesday, he had 58 - 23 = 35. "
        "After losing 2 more, he had 35 - 2 = 33 golf balls.",
        "33",
    ),
    Exemplar(
        "Olivia has $23. She bought five bagels for $3 each. How much money does she have left?",
        "Olivia had 23 dollars. 5 bagels for 3 dollars each will be 5 x 3 = 15 dollars. So she "
        "has 23 - 15 dollars left. 23 - 15 is 8.",
        "8",
    ),
)
