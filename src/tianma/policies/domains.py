"""Infer the domain of a request from its words (a lexicon; cheap and explainable)."""

from __future__ import annotations

from tianma.text.tokenize import token_set

DOMAIN_WORDS: dict[str, frozenset[str]] = {
    "finance": frozenset(
        [
            "理财",
            "投资",
            "股票",
            "基金",
            "收益",
            "利率",
            "贷款",
            "存款",
            "保险",
            "预算",
            "花费",
            "价格",
            "工资",
            "finance",
            "invest",
            "investment",
            "stock",
            "stocks",
            "fund",
            "return",
            "returns",
            "loan",
            "budget",
            "price",
            "salary",
            "money",
        ]
    ),
    "health": frozenset(
        [
            "健康",
            "医生",
            "药",
            "剂量",
            "症状",
            "生病",
            "医院",
            "过敏",
            "体检",
            "睡眠",
            "减肥",
            "health",
            "doctor",
            "medicine",
            "dose",
            "dosage",
            "symptom",
            "symptoms",
            "sick",
            "hospital",
            "allergy",
            "allergic",
            "sleep",
            "diet",
        ]
    ),
    "legal": frozenset(
        ["法律", "合同", "律师", "起诉", "法院", "legal", "law", "contract", "lawyer", "court", "sue"]
    ),
    "schedule": frozenset(
        [
            "提醒",
            "日程",
            "安排",
            "会议",
            "周末",
            "周六",
            "周日",
            "明天",
            "今天",
            "闹钟",
            "计划",
            "remind",
            "reminder",
            "schedule",
            "meeting",
            "weekend",
            "saturday",
            "sunday",
            "tomorrow",
            "today",
            "alarm",
            "plan",
            "calendar",
        ]
    ),
    "food": frozenset(
        [
            "吃",
            "喝",
            "饮料",
            "奶茶",
            "餐厅",
            "菜",
            "做饭",
            "食谱",
            "咖啡",
            "food",
            "eat",
            "drink",
            "restaurant",
            "recipe",
            "cook",
            "coffee",
            "tea",
        ]
    ),
    "travel": frozenset(
        ["旅行", "旅游", "机票", "酒店", "出差", "travel", "trip", "flight", "hotel", "vacation"]
    ),
    "tech": frozenset(
        [
            "代码",
            "编程",
            "电脑",
            "软件",
            "程序",
            "服务器",
            "python",
            "code",
            "coding",
            "programming",
            "computer",
            "software",
            "server",
        ]
    ),
    "creative": frozenset(
        ["写诗", "故事", "小说", "创作", "文案", "poem", "story", "novel", "write", "creative"]
    ),
}
"""Words that mark a domain; extend freely (a word may mark several domains)."""


def infer_domain(text: str) -> str:
    """The domain whose words the text uses most; ``general`` when none."""
    tokens = token_set(text)
    best, best_hits = "general", 0
    for domain, words in DOMAIN_WORDS.items():
        hits = len(tokens & words)
        if hits > best_hits:
            best, best_hits = domain, hits
    return best
