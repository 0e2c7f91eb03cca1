"""Synthetic but realistic user texts for the performance benchmark (Chinese and English).

Every text is built combinatorially from templates and slot values, so a pool of a few
thousand distinct statements costs nothing to generate and is the same for the same seed:
the populated stores, the measured turns' messages and the ingest texts are reproducible
without shipping a data file.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

PoolKind = Literal["event", "fact", "preference", "experience"]

CITIES = ("杭州", "上海", "北京", "成都", "深圳", "南京", "苏州", "武汉")
PLACES = ("西湖", "公司楼下的咖啡馆", "健身房", "图书馆", "外婆家", "机场", "医院", "菜市场")
PEOPLE = ("王经理", "妈妈", "老婆", "女儿小雨", "同事小陈", "大学室友", "房东", "李医生")
TASKS = ("给王经理打电话", "交房租", "取快递", "买牛奶", "预约牙医", "给妈妈寄药", "交水电费", "续签合同")
TIMES = ("早上八点", "中午十二点", "下午三点", "晚上七点半", "睡前", "下班后")
DAYS = ("明天", "后天", "周三", "周五", "这周六", "下周一", "月底", "周日上午")
FOODS = ("红烧肉", "麻辣烫", "牛肉面", "寿司", "沙拉", "饺子", "小龙虾", "酸菜鱼")
DRINKS = ("美式咖啡", "拿铁", "乌龙茶", "柠檬水", "豆浆", "绿茶")
FEELINGS = ("有点累", "压力很大", "心情不错", "睡得不好", "很焦虑", "特别开心")
REASONS = ("项目快上线了", "最近加班多", "孩子感冒了", "刚跑完十公里", "房贷涨了", "周末去爬山了")
HOBBIES = ("跑步", "游泳", "弹吉他", "下围棋", "拍照", "做饭", "看科幻小说", "骑行")
JOBS = ("软件工程师", "产品经理", "中学老师", "护士", "会计", "设计师")

EN_TASKS = (
    "call the landlord",
    "pay the gas bill",
    "renew my passport",
    "book a dentist appointment",
    "pick up the dry cleaning",
    "send the quarterly report",
    "water the plants",
    "buy a birthday card",
)
EN_WHEN = ("tomorrow morning", "on Friday", "next Monday", "tonight", "after lunch", "this weekend")
EN_CITIES = ("Tokyo", "Lisbon", "Chiang Mai", "Vancouver", "Berlin", "Seoul", "Istanbul", "Melbourne")
EN_MONTHS = ("March", "May", "July", "September", "October", "December")
EN_CUISINES = ("Thai", "Italian", "Sichuan", "Mexican", "Japanese", "Indian", "Greek")
EN_MEALS = ("dinner", "lunch", "a quick breakfast", "a picnic", "meal prep")
EN_FEELINGS = ("exhausted", "pretty relaxed", "a bit anxious", "really motivated", "stressed out")
EN_PLACES = ("the office", "the hospital", "school", "the warehouse", "the studio", "home")
EN_RELATIONS = ("sister", "manager", "best friend", "son", "neighbour", "mentor")
EN_NAMES = ("Anna", "Tom", "Priya", "Kenji", "Lucas", "Mei", "Omar", "Sofia")
EN_ALLERGENS = ("peanuts", "shellfish", "penicillin", "cat hair", "pollen", "lactose")
EN_PREFS = (
    "short answers",
    "bullet points",
    "metric units",
    "no emojis",
    "morning workouts",
    "window seats on flights",
    "vegetarian recipes",
    "reminders the evening before",
)


@dataclass(frozen=True, slots=True)
class PoolText:
    """One distinct statement of the pool, with the kind of record it reads like."""

    kind: PoolKind
    text: str
    key: str | None = None
    """A structured key for facts and preferences (bounded vocabulary, like real reflection)."""


def _fill(
    template: str, slots: dict[str, Sequence[str]], key: str | None = None
) -> Iterator[tuple[str, str | None]]:
    names = [n for n in slots if "{" + n + "}" in template]
    for values in itertools.product(*(slots[n] for n in names)):
        fields = dict(zip(names, values, strict=True))
        yield template.format(**fields), (key.format(**fields) if key else None)


_SLOTS: dict[str, Sequence[str]] = {
    "city": CITIES,
    "place": PLACES,
    "person": PEOPLE,
    "task": TASKS,
    "time": TIMES,
    "day": DAYS,
    "food": FOODS,
    "drink": DRINKS,
    "feeling": FEELINGS,
    "reason": REASONS,
    "hobby": HOBBIES,
    "job": JOBS,
    "task_en": EN_TASKS,
    "when_en": EN_WHEN,
    "city_en": EN_CITIES,
    "month_en": EN_MONTHS,
    "cuisine_en": EN_CUISINES,
    "meal_en": EN_MEALS,
    "feeling_en": EN_FEELINGS,
    "place_en": EN_PLACES,
    "relation_en": EN_RELATIONS,
    "name_en": EN_NAMES,
    "allergen_en": EN_ALLERGENS,
    "pref_en": EN_PREFS,
}

_TEMPLATES: dict[PoolKind, tuple[tuple[str, str | None], ...]] = {
    "event": (
        ("{day}{time}提醒我{task}", None),
        ("{day}我要去{place}，帮我看看那边天气怎么样", None),
        ("最近{feeling}，{reason}", None),
        ("帮我想想{day}给{person}买点什么礼物", None),
        ("今天中午吃了{food}，配了一杯{drink}", None),
        ("{day}想在{city}找个地方{hobby}", None),
        ("Remind me to {task_en} {when_en}", None),
        ("I'm planning a trip to {city_en} in {month_en}, any tips?", None),
        ("Can you suggest a {cuisine_en} recipe for {meal_en}?", None),
        ("Long day at {place_en}, feeling {feeling_en}", None),
    ),
    "fact": (
        ("我住在{city}，平时常去{place}", "profile.city"),
        ("我在{city}做{job}", "profile.job"),
        ("{person}的生日在{day}，记得提醒我", "family.{person}.birthday"),
        ("My {relation_en} is called {name_en}", "family.{relation_en}.name"),
        ("I'm allergic to {allergen_en}", "health.allergy.{allergen_en}"),
        ("I work at {place_en} and commute from home", "profile.workplace"),
    ),
    "preference": (
        ("我喜欢喝{drink}，不加糖", "preference.drink"),
        ("周末别给我安排{task}之类的提醒", "preference.weekend"),
        ("我最喜欢的运动是{hobby}", "preference.hobby"),
        ("我不太爱吃{food}", "preference.food.{food}"),
        ("I prefer {pref_en}", "preference.style"),
        ("我习惯{time}去{hobby}", "preference.routine.{hobby}"),
        ("I like {cuisine_en} food for {meal_en}", "preference.food.{cuisine_en}"),
        ("出差去{city}时我喜欢住在{place}附近", "preference.travel.{city}"),
    ),
    "experience": (
        ("上次推荐的{city}{food}店我觉得一般", None),
        ("{time}提醒我{task}效果不好，我总是忽略", None),
        ("Suggesting {cuisine_en} food for {meal_en} went well", None),
        ("The {city_en} itinerary was too packed for a {feeling_en} traveller", None),
    ),
}


def build_pool(counts: dict[PoolKind, int], seed: int) -> list[PoolText]:
    """Distinct texts of each kind, ``counts[kind]`` of them (fewer if the templates run out).

    Args:
        counts: how many texts of each kind.
        seed: shuffle seed; the same seed gives the same pool.

    Returns:
        The pool, grouped by kind in the order of ``counts``.
    """
    rng = random.Random(seed)
    pool: list[PoolText] = []
    for kind, count in counts.items():
        texts = {
            text: key for template, key in _TEMPLATES[kind] for text, key in _fill(template, _SLOTS, key)
        }
        chosen = sorted(texts)
        rng.shuffle(chosen)
        pool.extend(PoolText(kind, text, texts[text]) for text in chosen[:count])
    return pool


_QUERIES: tuple[str, ...] = (
    "{day}有什么安排吗？",
    "你还记得我喜欢喝什么吗？",
    "帮我规划一下{day}去{place}的行程",
    "{person}生日快到了，送什么好？",
    "最近{feeling}，有什么建议吗？",
    "晚饭吃{food}会不会太油了？",
    "我在{city}周末可以去哪里{hobby}？",
    "{day}{time}提醒我{task}",
    "上次说的那家{food}店叫什么来着？",
    "What do I have on {when_en}?",
    "Any ideas for my {relation_en}'s birthday?",
    "Is {cuisine_en} food okay given my allergies?",
    "What did I tell you about my trip to {city_en}?",
    "Remind me to {task_en} {when_en}",
    "How should I plan {meal_en} this week?",
)
_FOLLOW_UPS = ("那{day}呢？", "还有别的吗？", "好的，谢谢", "换一个吧", "And {when_en}?", "ok thanks")


def query_stream(seed: int, follow_up_rate: float = 0.15) -> Iterator[str]:
    """An endless, reproducible stream of user messages, with short follow-ups mixed in.

    Follow-ups ("那周日呢？") exercise retrieve's blending with the previous message.
    """
    rng = random.Random(seed)
    while True:
        templates = _FOLLOW_UPS if rng.random() < follow_up_rate else _QUERIES
        template = rng.choice(templates)
        yield template.format(**{name: rng.choice(values) for name, values in _SLOTS.items()})


REPLIES: tuple[str, ...] = (
    "好的，我记下了。需要的话我可以再提醒你一次。",
    "根据你之前说的，我建议先把最重要的事情排在上午。",
    "Sure — here is a short plan based on what you told me earlier.",
    "明白了。这件事我会在前一天晚上提醒你。",
    "Got it. Let me know if you want me to adjust anything.",
)
"""Canned replies of the scripted chat model (a reply's length affects redline checks)."""
