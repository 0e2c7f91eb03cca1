"""Rule-based extraction of explicit user statements: the first pass, and the fallback when the LLM fails.

Precision over recall (seed 001 §2.3, "信号宁弱勿错"): a clause that is a question, hypothetical,
reported or uncertain speech, or (with 我 omitted) possibly about someone else yields nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

Kind = Literal["preference", "fact"]
Polarity = Literal["like", "dislike", "must", "must_not", "is"]

CONF_EXPLICIT = 0.9
"""以后/今后/每次/记住, from now on/always/never/remember: the user asks for it to last."""
CONF_FACT = 0.85
"""A plain statement of who the user is: name, city, job, allergy."""
CONF_DIRECTIVE = 0.75
"""A directive with a known subject and no mark of permanence (回答简短一点, don't remind me)."""
CONF_LIKE = 0.7
"""A plain like or dislike (我喜欢…, I hate…)."""
OMITTED_SUBJECT_PENALTY = 0.05
"""Chinese drops 我; such a clause is only probably about the user."""


@dataclass(frozen=True, slots=True)
class Extracted:
    """One explicit statement of the user: a candidate fact or preference."""

    kind: Kind
    key: str
    """Dotted key, stable per subject (``profile.name``, ``preference.food.sugar``): contradictions are found by key."""
    content: str
    """A self-contained sentence in the user's language (``用户叫李明``, ``周末不要安排提醒``)."""
    polarity: Polarity
    scope: str
    """``global``, or ``domain:<name>`` when a scene (最近, 在家, on weekends) qualifies the statement."""
    time_bound: bool
    """Only about now (今天, this week): a passing mood or state, not a lasting trait."""
    confidence: float
    evidence: str
    """The clause it came from."""


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# Lexicons: one rule per line, so a reader can scan them (the formatter would explode them).
# fmt: off
_SCENES = tuple((name, _rx(rx)) for name, rx in (
    ("recent", r"最近|近来|这阵子|这段时间|\b(?:recently|lately|these days)\b"),
    ("home", r"在家|\bat home\b"),
    ("weekend", r"周末|周六|周日|星期六|星期天|礼拜天|\b(?:on|at) (?:the )?weekends?\b"),
    ("work", r"上班|工作(?:时|的时候)|在公司|\bat work\b|\bduring work\b"),
    ("evening", r"晚上|夜里|睡前|深夜|\bin the evenings?\b|\bat night\b"),
    ("morning", r"早上|早晨|上午|\bin the mornings?\b"),
))
_SCENE_ANY = "|".join(p.pattern for _, p in _SCENES)
_T_STRONG = r"今天|今晚|今早|明天|这周|本周|这个星期|这礼拜|这几天|这两天|这次|\b(?:today|tonight|tomorrow|this (?:week|time|morning|afternoon|evening))\b"
_T_WEAK = r"现在|目前|暂时|眼下|此刻|\b(?:right now|for now|at the moment|currently)\b"
_ADV = r"很|非常|特别|比较|挺|超|真的|确实|一直|也|都|最|平时|一般|向来|从来|其实|蛮|更|还是|就|有点|一点也|一点都|完全|真|好|越来越"
_WHEN = rf"{_SCENE_ANY}|{_T_STRONG}|{_T_WEAK}|[\d一二三四五六七八九十两]+点(?:半|钟)?|以后|之后|以前|之前|\b(?:after|before) \d+(?:\s*[ap]m)?"
_PRE = rf"(?:{_WHEN}|{_ADV}|\s)*"
_S = r"(?:(?P<subj>(?<![你他她它让叫给和跟对说])我)|^)(?:现在|目前|一直|也|还|其实)?"  # 我, or omitted at clause start
_E = r"(?=$|[\s,，。.!！;；~～]|以后|今后)"

RHETORICAL_WHERE = r"(?![里儿]?[\u4e00-\u9fff]{1,2}得(?:了|起|消|住|下|动|惯|着))"
"""哪 before “can bear / can afford” (我这胃哪受得了, 小店哪用得起, 哪吃得消) says “cannot”; it asks nothing."""
LISTING_WHAT = r"(?!(?<![干做是搞为用]什么)的|[^，,。？?！!]{1,20}(?:、|之类))"
"""什么 before 的 (“and so on”: 别发表情什么的 — but 这是干什么的 asks) or before a list (什么APP、OK、Wi-Fi的 =
“things like”) asks nothing."""
_QUESTION = _rx(rf"[?？]|吗|什么{LISTING_WHAT}|怎么|(?<!不)咋|为什么|为啥|哪(?![里儿个样]?都){RHETORICAL_WHERE}|谁(?!都)|(?<!没)啥(?![的都])|难道|是不是|有没有|能不能|要不要|会不会|(?<!不)对不对|可不可以|好不好|几点|"
                r"多少(?!有[点些])|么$|呢$"
                r"|^(?:what|whats|where|wheres|who|whos|whose|why|how|hows|which|do(?! not)|does|did|didn't|doesn't|is|isn't|are|aren't|am|was|were|can|could|would|will|won't|should|have|has)\b"
                r"|^when(?:ever)?\b(?![^,，]*[,，])")
"""A question: a question word or mark (also as typed in chat: 咋弄, “whats a good …”). Not one: 没啥 / 啥的 (“nothing much”, “and so on”), 哪受得了
(“cannot bear”), 哪儿都 /
谁都 (“anywhere”, “anyone”), 多少有点 (“somewhat”), “When you …, do …” (a habit, not a question)."""
_TAG_QUESTION = _rx(r"(?:对吧|是吧|对不对|是不是|没错吧|\bright|\bcorrect|\bisn't it|\bdon't I|\bdidn't I)\s*[?？]\s*$")
_HYPOTHETICAL = _rx(r"如果|假如|(?<!主)要是|假设|万一|假若|倘若|比如|例如|举个例子|假装|想象"
                    r"|^\s*say\b|\bif\b(?! (?:you(?:'d| would) be so kind|you don't mind|you do not mind|possible|you can|you could|you please|that's (?:ok|okay|alright)))|\b(?:suppose|supposing|imagine|what if|pretend|let's say|hypothetically|for example|for instance)\b")
_HEARSAY = _rx(r"(?:他|她|他们|朋友|别人|有人|人家)说|你说(?!话|[\u4e00-\u9fff]{1,3}(?:一点|一些|点|些)(?:$|\s|[，,。！!]|没事|就行|就好|吧))|(?<![小演学解传])说(?:过)?我|以为|觉得|认为|听说|据说|梦见|梦到|好像|(?<!尽)可能|也许|大概|不确定|不知道|不记得"
               r"|\b(?:said|says|told|tells|thinks?|thought|believes?|heard|dreamt|dreamed|maybe|perhaps|probably|might|not sure|guess)\b")
_THIRD = re.compile(r"(?<!其)他|她|朋友|同事|老婆|老公|妻子|丈夫|孩子|儿子|女儿|妈|爸|父亲|母亲|哥|姐|弟|妹|家人|男友|女友|老板|客户|别人|有人|同学|室友|邻居")
_QUOTED = re.compile(r"“[^”]*”|‘[^’]*’|「[^」]*」|『[^』]*』|\"[^\"]*\"")
_SENTENCE = re.compile(r"(?:[^。！？!?；;\n.]|\.(?=\S))+[。！？!?；;\n.]*")
_CLAUSE_SEP = re.compile(r"[，,：:]|\s+(?:and|but|so|also)\s+(?=(?:I|I'm|my|please|don't|never|always)\b)"
                         r"|(?:而且|但是|不过|另外|并且|还有|同时)(?=我|以后|今后|别|不要|不用|最近|周末|在家|平时)")
_FUTURE = _rx(r"^(?:以后|今后|从现在开始|从今天起|从今往后|往后|from now on|going forward|in (?:the )?future)\s*")
_REMEMBER = _rx(r"^(?:请|你|麻烦你?|帮我)?(?:要)?(?:记住|记好|记着|记一下)(?!了$)\s*|^(?:please\s+)?(?:remember|keep in mind)(?:\s+that\b|\s*[:,]|(?=\s+(?:I|my)\b))\s*")
_BARE_PREFIX = _rx(rf"^(?:以后|今后|从现在开始|从今天起|从今往后|请?记住|你记住|(?:please )?remember|from now on|going forward|{_SCENE_ANY}|{_T_STRONG})+$")
_LEAD = _rx(r"^(?:对了|另外|还有|然后|而且|但是|不过|并且|其实|说实话|老实说|顺便说一下|嗯|哦|噢|ok(?:ay)?\b|oh\b|also\b|btw\b|and\b|so\b|well\b)\s*")
_PLEASE = _rx(r"^(?:请|麻烦你?|你(?!的)|please\s+|kindly\s+)+")
_POLITE_Q = _rx(r"^(?:can|could|would|will) you (?:please )?(?=remember|always|never|keep|stop|call me|not\b)")
_HABIT = _rx(r"以后|今后|从现在开始|从今天起|从今往后|每次|总是|一直|永远|往后|\b(?:always|never|every time|from now on|going forward|in (?:the )?future|anymore|ever again)\b")

# (slug, domain, pattern): phrasings of one subject share a key; specific concepts come first (低糖奶茶 is milk tea).
_CONCEPTS = tuple((slug, domain, _rx(rx)) for slug, domain, rx in (
    ("milk_tea", "food", r"奶茶|milk ?tea|bubble tea|boba"),
    ("coffee", "food", r"咖啡|拿铁|coffee|latte|espresso"),
    ("sugar_free", "food", r"无糖|低糖|少糖|代糖|sugar[- ]free|low[- ]sugar|unsweetened"),
    ("sugar", "food", r"^(?:太|很|偏)?甜(?:的|食|品|点|饮料?|的饮料|的东西)?$|含糖|^糖$|甜饮|\bsugar|^sweets?$|\bsweet (?:drinks?|things|stuff|food)"),
    ("spicy", "food", r"^(?:太|很)?辣(?:的|的东西|的菜|椒)?$|麻辣|辣椒|\bspicy|\bhot food"),
    ("cilantro", "food", r"香菜|芫荽|cilantro|coriander"),
    ("seafood", "food", r"海鲜|seafood|shellfish"),
    ("peanut", "food", r"花生|peanut"),
    ("milk", "food", r"^牛奶$|^milk$|dairy|乳制品"),
    ("alcohol", "food", r"^酒$|^alcohol$"),
    ("expensive", "shopping", r"^(?:太|很|比较)?贵(?:的.*)?$|价格高|高价|高端|奢侈|\b(?:expensive|pricey|luxury|high-end)\b"),
))
_FOOD = _rx(r"菜|饭|面|粥|汤|饮料|饮品|茶|酒|肉|鱼|虾|蛋|牛奶|酸奶|水果|零食|甜|辣|\b(?:food|drinks?|dish|cuisine|tea|beer|wine|meat|fish|fruit|snacks?|dessert)")
_FOOD_VERB = _rx(r"^(?:吃|喝|品|尝|eat(?:ing)?\b|drink(?:ing)?\b)\s*")
_JOBS_ZH = "工程师|程序员|程序媛|码农|设计师|医生|护士|老师|教师|律师|会计师?|学生|研究生|博士生?|大学生|高中生|产品经理|项目经理|经理|销售|记者|作家|厨师|司机|研究员|分析师|教授|架构师|编辑|摄影师|翻译|公务员|警察|建筑师|咨询师|顾问|自由职业者|主播|演员|歌手|画家|农民|工人|店主|财务|科学家|药剂师|牙医|兽医|飞行员|运营|创业者|实习生"
_JOBS_EN = "engineer|developer|programmer|designer|doctor|physician|nurse|teacher|lawyer|accountant|student|manager|writer|journalist|chef|driver|researcher|analyst|professor|scientist|consultant|architect|pharmacist|dentist|pilot|editor|photographer|translator|artist|musician|farmer|entrepreneur|founder|freelancer|intern|salesperson|marketer|economist|librarian|therapist|firefighter|police officer|veterinarian"
_NAME_V = r"(?P<v>[\u4e00-\u9fff·]{2,4}?|[A-Z][A-Za-z'-]+(?: [A-Z][A-Za-z'-]+){0,2})"

# (rule, pattern with a value group v/v2, pattern of values that disqualify the match)
_FACTS = tuple((rule, re.compile(rx), re.compile(bad) if bad else None) for rule, rx, bad in (
    ("name", rf"(?:我叫|我的名字(?:是|叫))\s*{_NAME_V}(?=$|就|吧|好了|[\s,，。.!！;；]|以后|今后|在|住|是|今年|来自)", r"^(?:了|过|着|外卖|车|快递|醒|起|去|来|吃|回|做|一|别|不|帮|给|上|下|出|进|你|他|她|这|那|救|打|喊|老公|老婆)"),
    ("call", rf"(?:^|可以|就|直接)(?:叫我|称呼我为?)\s*{_NAME_V}(?=$|就|吧|好了|[\s,，。.!！;；])", r"^(?:了|起|去|来|吃|回|做|一|帮|上|下|出|进|醒|过)"),
    ("name", r"(?<!n't )(?<!not )(?i:\bmy name is|\bmy name's|\bi'm called|\bi am called)\s+(?P<v>[A-Z][A-Za-z'-]+(?: [A-Z][A-Za-z'-]+){0,2}|[\u4e00-\u9fff]{2,4})", r"^(?:Not|The|A)$"),
    ("call", r"(?<!n't )(?<!not )(?<!never )(?i:\bcall me)\s+(?P<v>[A-Z][A-Za-z'-]+(?: [A-Z][A-Za-z'-]+)?)", r"^(?:Later|Back|Tomorrow|Maybe|When|If)$"),
    ("city", rf"{_S}(?:住在|住|家在|生活在)(?P<v>[\u4e00-\u9fffA-Za-z]{{2,12}}?)(?=$|[\s,，。.!！;；]|附近|这边|那边|的)", r"^(?:酒店|宾馆|医院|朋友家|这|那|一起|附近|隔壁|楼|学校|宿舍|院)"),
    ("city", r"\b(?i:I (?:currently |now |still )?live in|I'm based in|I am based in)\s+(?P<v>(?:the )?[A-Z][\w'-]*(?: [A-Z][\w'-]*){0,3})", None),
    ("hometown", rf"{_S}来自(?P<v>[\u4e00-\u9fffA-Za-z]{{2,10}}?){_E}", None),
    ("hometown", rf"{_S}是(?P<v>[\u4e00-\u9fff]{{2,6}}?)人{_E}", r"^(?:外地|本地|大|好|坏|老实|普通|年轻|男|女|单身|一个|个|文化|成年|聪明|老|新)"),
    ("hometown", r"\b(?i:I'm from|I am from|I come from)\s+(?P<v>[A-Z][\w'-]*(?: [A-Z][\w'-]*){0,3})", None),
    ("workplace", rf"{_S}在(?P<v>[\u4e00-\u9fffA-Za-z0-9]{{2,12}}?)(?:工作|上班|任职){_E}", r"^(?:家|这|那|哪|外面|认真|努力|专心|加班|好好|拼命|埋头|忙|公司)"),
    ("workplace", r"\b(?i:I work (?:at|for|in))\s+(?P<v>[A-Z][\w&.'-]*(?: [A-Z][\w&.'-]*){0,3})", None),
    ("job", rf"{_S}(?:是|当|做|干|的工作是|的职业是|在(?P<place>[\u4e00-\u9fff]{{2,8}}?)(?:做|当|干))(?:一名|一个|一位|个|名|位)?(?P<v>[\u4e00-\u9fffA-Za-z]{{0,8}}?(?:{_JOBS_ZH}))的?{_E}", r"[你他她我的]"),
    ("job", rf"\b(?i:I'm|I am|I work as)\s+(?i:an?)\s+(?P<v>(?i:(?:[a-z-]+\s+){{0,3}}?(?:{_JOBS_EN})))s?\b", r"(?i)\b(?:good|bad|terrible|great|big|huge|careful|safe|fast|slow|picky|lazy|better|worse|poor)\b"),
    ("birthday", r"我的?生日(?:是|在)(?P<v>[^，,。!！?？]{2,12})|(?i:\bmy birthday is)\s+(?:on\s+)?(?P<v2>[^,.;!?]{2,20})", None),
    ("allergy", rf"{_S}(?:{_ADV})*对(?P<v>[^，,。.!！?？;；]{{1,12}}?)(?:{_ADV})*(?P<neg>不)?过敏", None),
    ("allergy", r"\bI(?:'m| am)\s+(?P<neg>not\s+)?(?:very\s+|severely\s+|mildly\s+|slightly\s+|also\s+)?allergic to\s+(?P<v>[^,.;!?]+)|\bI have an? (?P<v2>[\w -]+?) allergy", None),
    ("state", rf"{_S}(?:{_T_STRONG}|{_T_WEAK}|最近|{_ADV})*(?P<v>忙|在减肥|在出差|在休假|生病了|感冒了|在备考)(?=$|[\s,，。.!！;；]|得|死)", None),
    ("state", r"\bI(?:'m| am)\s+(?:really |very |so |a bit |quite |super )?(?P<v>busy|on a diet|dieting|traveling|travelling|on vacation|on holiday|sick|ill)\b(?! of)", None),
))
_STATES = {"忙": "busy", "在减肥": "dieting", "在出差": "traveling", "在休假": "vacation", "生病了": "sick", "感冒了": "sick", "在备考": "exam",
           "on a diet": "dieting", "travelling": "traveling", "on vacation": "vacation", "on holiday": "vacation", "ill": "sick"}
_FACT_TEXT = {"name": ("用户叫{v}", "User's name is {v}"), "call": ("请称呼用户为{v}", "Call the user {v}"), "city": ("用户住在{v}", "User lives in {v}"),
              "hometown": ("用户来自{v}", "User is from {v}"), "workplace": ("用户在{v}工作", "User works at {v}"), "job": ("用户是{v}", "User is a {v}"),
              "birthday": ("用户的生日是{v}", "User's birthday is {v}")}

_VERBS: tuple[tuple[Polarity, str], ...] = (
    ("dislike", r"不太喜欢|不怎么喜欢|不喜欢|不爱|讨厌|受不了|反感|不感冒|(?:really )?(?:hate|dislike|detest)|can't stand|cannot stand|don't (?:really )?(?:like|love|enjoy)|do not (?:like|love|enjoy)"),
    ("must_not", r"不能吃|不能喝|吃不了|喝不了|从不吃|从不喝|不吃|不喝|戒了|don't (?:eat|drink)|do not (?:eat|drink)|never (?:eat|drink)|can't (?:eat|drink)|cannot (?:eat|drink)|avoid"),
    ("like", r"喜欢|最爱|超爱|热爱|偏爱|钟爱|爱上了|迷上了?|爱|like|love|enjoy|adore|prefer|'m into|am into|'ve been into|have been into|'m a (?:big |huge )?fan of|am a (?:big )?fan of"),
)
_VERB_ALT = "|".join(rx for _, rx in _VERBS)
_LIKE_ZH = re.compile(rf"{_S}{_PRE}(?P<verb>{_VERB_ALT})(?P<item>.+)$")
_LIKE_EN = _rx(rf"\bI(?:\s+(?:really|do|absolutely|totally|also|just|generally|usually|kind of|kinda|still|truly|honestly|definitely|always|actually))*(?:\s+|(?='))(?P<verb>{_VERB_ALT})\s+(?P<item>[^,.;!?]+)")
_EN_THIRD_PERSON = ((r"^(?:'m|am)\b", "is"), (r"^(?:'ve|have)\b", "has"), (r"^don't\b", "doesn't"), (r"^do not\b", "does not"),
                    (r"^(really )?(like|love|enjoy|adore|prefer|hate|dislike|detest|avoid)\b", r"\1\2s"), (r"^never (\w+)", r"never \1s"))
_INTEREST_ZH = re.compile(rf"{_S}对(?P<item>[^，,。]{{1,12}}?)(?:{_ADV})*(?P<neg>不)?感兴趣")
_BAD_ITEM = _rx(r"^(?:你|他|她|它|这|那|谁|什么|啥|哪|怎么|自己|死|就|的|了|吗|吧|呢|啊|过|着|得|不|人|好|是|被|说|亏$|醋$|苦$|惊$|香$)"
                r"|\b(?:it|this|that|these|those|you|your|him|her|them|us|what|how|when|where|which|who|whatever|everything|anything|nothing|something)\b")
_EN_CUT = _rx(r"\s+(?:but|because|since|so|when|whenever|if|though|although|and I|which|as|while|unless|over|rather than|instead of|very much|a lot|so much)\b.*$")

_ANS = r"回答|回复|答案|说话|解释|讲|answers?|responses?|replies|explanations?"
_LEN_EN = r"(?:short(?:er)?|brief|concise|succinct|detailed|longer|thorough|in-depth)"
_LEN_RULES = (  # index 2 is "I prefer…" (polarity like); index 3 ("be brief") needs a mark of permanence
    _rx(rf"^(?:你的?|{_ADV}|{_WHEN}|时|的时候)*(?:{_ANS})(?:的时候)?(?:请|要|尽量|都|最好|可以|再|更|能|就)*(?P<neg>不要太?|别太?|不用太?)?(?:更)?(?:简短|简洁|精简|简单|短|少于|控制在|详细|具体|长|啰嗦?|展开)"),
    _rx(rf"^(?:always\s+)?(?:keep|make)\s+(?:your\s+|the\s+)?(?P<obj>{_ANS}|it)\s+(?:short|brief|concise|succinct|detailed|longer|thorough)\b"),
    _rx(rf"\bI (?:prefer|like|want)\s+(?:(?:your|the)\s+(?:{_ANS})\s+(?:to be\s+)?(?:more\s+)?{_LEN_EN}|(?:more\s+)?{_LEN_EN}\s+(?:{_ANS}))\b"),
    _rx(r"^(?:always\s+)?(?:be|answer)\s+(?:more\s+)?(?:brief(?:ly)?|concise(?:ly)?|short|detailed|thorough(?:ly)?|in detail)\b"),
)
_LEN_BARE = _rx(r"^(?:再|更)?(?:简短|简洁|短|详细|具体)(?:一点|一些|些|点)?$")
_LONG = _rx(r"详细|具体|长|啰嗦|展开|detail|longer|thorough|in-depth")
_STRUCTURE = _rx(r"先(?:说|给|讲|上|告诉我)?我?(?:结论|重点)|结论先行|\b(?:conclusion|bottom line|tl;?dr|summary) first\b|\b(?:lead|start) with the (?:conclusion|answer|bottom line)\b")
_LANGUAGE = _rx(r"用(?:英文|英语|中文|汉语|普通话|日语|日文|粤语|繁体中文|简体中文)来?(?:回答|回复|交流|和我说话|跟我说话|说|写)"
                r"|\b(?:answer|reply|respond|write|speak|talk)(?: to me)? in (?:English|Chinese|Mandarin|Cantonese|Japanese|Spanish|French|German)\b")
_EMOJI = _rx(r"表情|颜文字|\bemojis?\b")
_NEG_DIRECTIVE = _rx(rf"^(?:{_WHEN}|你|也|都|就|再|千万|可|\s)*(?P<neg>别|不要|不用|不必|甭|不许|不准|不需要|don't|do not|never|stop|no more)(?=\s*\S)")
_PERMIT_DIRECTIVE = _rx(rf"^(?:{_WHEN}|你|\s)*(?:也|又|还是|照样)?(?:可以|能够?)(?:再|继续)?(?=\s*\S)|^(?:you\s+)?(?:can|may)\s+(?:again\s+)?(?=\S)")
"""A change of mind phrased as permission: 以后周末也可以给我安排提醒了 / you can book meetings again."""
_POS_DIRECTIVE = _rx(rf"^(?:{_WHEN}|你|也|都|就|\s)*(?:要|先|用|多|尽量|每次|都|总是|记得|帮我|给我|提醒我|直接|只|按|always\b|use\b|give\b|answer\b|reply\b|remind\b|include\b|add\b)")
_SCHEDULE = (("reminders", _rx(r"提醒|闹钟|\bremind(?:ers?)?\b|\balarms?\b")), ("notifications", _rx(r"通知|推送|打扰|\bnotifications?\b|\bdisturb\b|\bping\b")),
             ("meetings", _rx(r"会议|开会|\bmeetings?\b")))
_RECOMMEND = _rx(r"(?:推荐|推(?!迟|送|掉|开|辞|脱|动|进|广|出|算|理|测|倒)|\brecommend|\bsuggest)(?:给我|我|\s+(?:me|to me|any))?\s*(?P<item>.*)$")
_IDLE = _rx(r"^(?:(?:不要|别|不用|不必)?(?:再说|再聊|再看|再讲|再议|再联系|谢|客气|担心|急|着急|紧|怕|了|管)|(?:don't |do not |never )?(?:mind|worry|bother|forget|apologi[sz]e|thank)\b)")
# fmt: on


def _is_zh(s: str) -> bool:
    return re.search(r"[\u4e00-\u9fff]", s) is not None


def _slug(item: str, food: bool = False) -> tuple[str, str]:
    """The subject slug and domain of an item: a shared concept when one matches, else its words."""
    text = re.sub(rf"{_SCENE_ANY}|{_T_STRONG}|{_T_WEAK}", "", item, flags=re.IGNORECASE).strip() or item
    body = re.sub(r"^(?:to|an?|the|some|my)\s+", "", _FOOD_VERB.sub("", text), flags=re.IGNORECASE).strip()
    for slug, domain, rx in _CONCEPTS:
        if rx.search(body):
            return slug, domain
    domain = "food" if food or body != text or _FOOD.search(body) else "general"
    words = re.sub(r"[^\w]+", " ", body.lower()).split()
    if words and not _is_zh(words[-1]) and len(words[-1]) > 3 and re.search(r"[^su]s$", words[-1]):
        words[-1] = words[-1][:-1]  # crude singular, so "onions" and "onion" share a key
    return "_".join(words)[:32].rstrip("_") or "item", domain


def _zh_user(s: str) -> str:
    return s.replace("我们", "\0").replace("我", "用户").replace("\0", "我们")


def _en_user(s: str) -> str:
    s = re.sub(r"\bI'm\b", "the user is", s)
    s = re.sub(r"\bmy\b", "the user's", re.sub(r"\b(?:me|I)\b", "the user", s), flags=re.IGNORECASE)
    return s[:1].upper() + s[1:]


def _instruction(c: str) -> str:
    """A directive as a stored instruction: 别给我安排提醒 → 不要安排提醒; don't remind me → Don't remind the user."""
    if not _is_zh(c):
        return _en_user(_PLEASE.sub("", c).strip())
    s = re.sub(r"^(?:你|请|也|都|就|千万|可)+", "", c)
    s = re.sub(r"(?<![特区分个级类性])(?:别|甭|不许|不准)(?!人|的|处)|千万不要", "不要", s)
    s = re.sub(r"给我(?=安排|推荐|推|发|打|设|定|订|加)", "", s)
    return _zh_user(re.sub(r"[了啦吧哦啊呀哈嘛喔~～\s]+$", "", s))


class _Clause:
    """One clause stripped of its prefixes, with what it says about time, scene and permanence."""

    def __init__(self, raw: str, omit_ok: bool) -> None:
        self.evidence = raw.strip(" \t。！？!?；;.")
        c = _LEAD.sub("", _POLITE_Q.sub("", self.evidence)).strip()
        c = _FUTURE.sub("", c)
        r = _REMEMBER.match(c)
        self.remember = r is not None and len(c) > r.end()
        c = _FUTURE.sub("", c[r.end() :] if r and self.remember else c)
        self.text = _PLEASE.sub("", c).strip(" ，,")
        self.explicit = self.remember or _HABIT.search(self.evidence) is not None
        self.zh = _is_zh(self.text)
        self.omit_ok = omit_ok
        self.scene = next((name for name, rx in _SCENES if rx.search(self.text)), None)
        self.strong = re.search(_T_STRONG, self.evidence, re.IGNORECASE) is not None
        self.weak = re.search(_T_WEAK, self.evidence, re.IGNORECASE) is not None

    def make(self, kind: Kind, key: str, content: str, pol: Polarity, conf: float, *, scene: str | None = None,
             directive: bool = False) -> Extracted:  # fmt: skip
        if scene:  # scene-qualified: its own key (coexists with the general one) and a domain scope
            head, _, tail = key.partition(".schedule.")
            key = f"{head}.schedule.{scene}.{tail}" if tail else f"{key}.{scene}"
        time_bound = self.strong or (directive and self.weak) or key.startswith("state.")
        conf = max(conf, CONF_EXPLICIT) if self.explicit and not time_bound else conf
        scope = "global" if scene is None else f"domain:{key.split('.')[1]}"
        return Extracted(kind, key, content, pol, scope, time_bound, round(conf, 2), self.evidence)


def _facts(cl: _Clause) -> list[Extracted]:
    out: list[Extracted] = []
    for rule, rx, bad in _FACTS:
        for m in rx.finditer(cl.text):
            d = m.groupdict()
            v = (d.get("v") or d.get("v2") or "").strip()
            omitted = "subj" in d and d["subj"] is None
            if not v or (bad is not None and bad.search(v)) or (omitted and not cl.omit_ok):
                continue
            conf = CONF_FACT - (OMITTED_SUBJECT_PENALTY if omitted else 0.0)
            zh = _is_zh(m.group(0))
            if rule == "allergy":
                no = "不" if d.get("neg") else ""
                for part in re.split(r"和|、|跟|以及|及|还有|与|,|\band\b|\bor\b", _EN_CUT.sub("", v)):
                    part = re.sub(r"\s+(?:too|also|as well)$", "", part.strip())
                    if part and not _BAD_ITEM.search(part):
                        text = (
                            f"用户对{part}{no}过敏"
                            if zh
                            else f"User is {'not ' * bool(no)}allergic to {part}"
                        )
                        out.append(cl.make("fact", f"health.allergy.{_slug(part)[0]}", text, "is", conf))
            elif rule == "state":
                text = _zh_user("我" + cl.text.removeprefix("我")) if zh else _en_user(cl.text)
                out.append(cl.make("fact", f"state.{_STATES.get(v.lower(), v.lower())}", text, "is", conf))
            else:
                text = _FACT_TEXT[rule][0 if zh else 1].format(v=v)
                text = text.replace(" a ", " an ") if rule == "job" and v[:1].lower() in "aeiou" else text
                key = "profile.name" if rule == "call" else f"profile.{rule}"
                out.append(cl.make("fact", key, text, "is", conf))
                if d.get("place"):  # 在杭州做软件工程师: the job and where it is
                    out.append(cl.make("fact", "profile.workplace", f"用户在{d['place']}工作", "is", conf))
    return out


def _style(cl: _Clause) -> list[Extracted]:
    """How to answer: length, conclusion first, language, emoji."""
    t, key, text = cl.text, "", ""
    pol: Polarity = "must"
    for i, rx in enumerate(_LEN_RULES):
        m = rx.search(t)
        if m and not ((i == 3 or (m.groupdict().get("obj") or "").lower() == "it") and not cl.explicit):
            longer = bool(_LONG.search(m.group(0))) != bool(m.groupdict().get("neg"))  # 不要太长: short
            key, pol = "preference.answer.length", "like" if i == 2 else "must"
            text = (
                ("Give detailed answers" if longer else "Keep answers short")
                if not cl.zh
                else _instruction(t)
            )
            text = (
                text
                if not cl.zh or re.search(r"回答|回复|答案", t)
                else ("回答要详细" if longer else "回答要简短")
            )
            break
    else:
        if _LEN_BARE.match(t) and cl.explicit:  # 以后短一点
            key, text = "preference.answer.length", "回答要详细" if _LONG.search(t) else "回答要简短"
        elif _STRUCTURE.search(t) and not re.search(r"我先|\bI'll\b", t):
            key = "preference.answer.structure"
            text = "先说结论，再讲细节" if cl.zh else "Give the conclusion first, then the details"
        else:
            neg = _NEG_DIRECTIVE.match(t) is not None
            for k, rx in (("preference.answer.language", _LANGUAGE), ("preference.answer.emoji", _EMOJI)):
                if rx.search(t) and (neg or cl.explicit):
                    key, pol, text = k, "must_not" if neg else "must", _instruction(t)
                    break
    if not key:
        return []
    directive = key.endswith(("language", "emoji"))
    return [cl.make("preference", key, text, pol, CONF_DIRECTIVE, scene=cl.scene, directive=directive)]


def _likes(cl: _Clause) -> list[Extracted]:
    t, tail = cl.text, ""
    m = (_INTEREST_ZH.search(t) or _LIKE_ZH.search(t)) if cl.zh else _LIKE_EN.search(t)
    omitted = m is not None and "subj" in m.groupdict() and m.group("subj") is None
    if m is None or (omitted and not cl.omit_ok):
        return []
    verb = m.groupdict().get("verb") or ""
    pol: Polarity = "dislike" if m.groupdict().get("neg") else "like"
    pol = next((p for p, rx in _VERBS if verb and re.fullmatch(rx, verb, re.IGNORECASE)), pol)
    item = m.group("item").strip()
    if cl.zh:
        item = re.sub(r"^上了|[了啦呀啊哦吧~～\s]+$", "", item)
        parts = [p for p in re.split(r"和|、|跟|以及", item) if p] if len(item) <= 12 else [item]
        head = _zh_user(t[: m.start("item")])  # keeps a leading scene: 在家我不喝 → 用户在家不喝
        head = "用户" + head.replace("用户", "", 1)
        tail = f"{'不' if m.groupdict().get('neg') else ''}感兴趣" if m.re is _INTEREST_ZH else ""
    else:
        item = _EN_CUT.sub("", item).strip()
        if pol == "like" and re.match(r"not to\s+", item, re.IGNORECASE):
            pol, item = "dislike", item[7:]  # "prefer not to X": the subject is X
            verb += " not to"
        parts = [item] if len(item.split()) <= 6 else []
        v = verb.lower().strip()
        for old, new in _EN_THIRD_PERSON:
            v = re.sub(old, new, v)
        head = f"User {v} "
    if not parts or any(not p or (cl.zh and len(p) > 20) or _BAD_ITEM.search(p) for p in parts):
        return []
    conf = CONF_LIKE - (OMITTED_SUBJECT_PENALTY if omitted else 0.0)
    out = []
    for part in parts:
        slug, domain = _slug(part, food=re.search(r"吃|喝|eat|drink", verb, re.I) is not None)
        key = f"preference.{domain}.{slug}"
        if re.search(_ANS, part, re.IGNORECASE) and re.search(
            r"简|短|详细|short|brief|concise|detail", part, re.I
        ):
            key = "preference.answer.length"  # 我喜欢简短的回答
        out.append(cl.make("preference", key, head + part + tail, pol, conf, scene=cl.scene))
    return out


def _directive(cl: _Clause) -> list[Extracted]:
    """Imperatives to the assistant: 别/不要…, don't/never… on a known subject; 以后/always… on any subject."""
    t = cl.text
    neg = _NEG_DIRECTIVE.match(t)
    permit = _PERMIT_DIRECTIVE.match(t) if neg is None and cl.explicit else None
    if neg is None and permit is None and (_POS_DIRECTIVE.match(t) is None or not cl.explicit):
        return []
    body = t[neg.end() :].strip() if neg else t[permit.end() :].strip() if permit else t
    if _IDLE.match(body) or _BAD_ITEM.search(re.sub(r"^(?:给我|帮我)", "", body)):
        return []  # 别担心, 不用了, don't worry, never mind, 别这样
    key = next((f"preference.schedule.{what}" for what, rx in _SCHEDULE if rx.search(body)), None)
    rec = _RECOMMEND.search(body) if key is None else None
    if rec is not None:
        item = re.sub(r"[了啦吧哦啊呀~～\s]+$", "", rec.group("item"))
        key = f"preference.recommend.{_slug(item)[0]}" if item else "preference.recommend"
    if key is None and cl.explicit:
        core = re.sub(
            r"^(?:(?:要|每次|都|总是|记得|尽量|always|please|主动)\s*)+|给我|帮我|我|\bme\b", "", body
        )
        key = f"preference.behavior.{_slug(core)[0]}"
    if key is None:
        return []
    pol: Polarity = "must_not" if neg else "must"
    return [cl.make("preference", key, _instruction(t), pol, CONF_DIRECTIVE, scene=cl.scene, directive=True)]


def _note(cl: _Clause) -> list[Extracted]:
    """记住… / remember that… with no more specific rule: kept as the user said it."""
    t = cl.text
    if len(t) < 2 or _BAD_ITEM.match(t):
        return []  # 记住这个: refers to context we cannot see
    text = (_zh_user(t) if t.startswith("我") else t) if cl.zh else f'User asked to remember: "{t}"'
    slug = re.sub(r"\W+", "_", t.lower().replace("我", "")).strip("_")[:32]
    return [cl.make("fact", f"note.{slug}", text, "is", CONF_EXPLICIT)]


_STEPS: tuple[Callable[[_Clause], list[Extracted]], ...] = (_facts, _style, _likes, _directive)


def _clauses(sentence: str) -> Iterator[str]:
    """Clauses of one sentence; a bare prefix (以后，/ from now on, / 记住：) joins the clause after it."""
    pieces = re.split(f"({_CLAUSE_SEP.pattern})", sentence)
    carry = ""
    for part, sep in zip(pieces[::2], [*pieces[1::2], ""], strict=True):
        if not part.strip():
            continue
        if _BARE_PREFIX.match(part.strip(" 。！？!?；;.")):
            carry += part + sep
            continue
        yield carry + part
        carry = ""
    if carry.strip():
        yield carry


def asserted_sentences(text: str) -> list[str]:
    """Sentences of a message that assert something: no question, hypothetical, quote or hearsay."""
    cleaned = _QUOTED.sub(lambda m: " " * len(m.group(0)), text)
    return [
        s.strip()
        for s in _SENTENCE.findall(cleaned)
        if s.strip()
        and not (
            _QUESTION.search(s) or _HYPOTHETICAL.search(s) or _HEARSAY.search(s) or _TAG_QUESTION.search(s)
        )
    ]


def extract_statements(text: str) -> list[Extracted]:
    """Explicit statements of the user in one message, in order; the later wins when two share a key.

    Args:
        text: the user's message, Chinese or English.

    Returns:
        Candidate facts and preferences; nothing for questions, hypotheticals, quoted or reported
        speech, uncertain statements, or statements about other people.
    """
    found: dict[str, Extracted] = {}
    third_party = False
    cleaned = _QUOTED.sub(lambda m: " " * len(m.group(0)), text)  # quoted speech is someone else's words
    for sentence in _SENTENCE.findall(cleaned):
        skip_rest = _TAG_QUESTION.search(sentence) is not None  # 我喜欢猫，对吧？
        for raw in _clauses(sentence):
            skip_rest = skip_rest or _HYPOTHETICAL.search(raw) is not None  # taints the rest of the sentence
            polite = _POLITE_Q.sub("", raw.strip())  # "could you remember that…?" is a request
            question = _QUESTION.search(polite.rstrip("?？ ") if polite != raw.strip() else raw)
            if not (skip_rest or question or _HEARSAY.search(raw)):
                cl = _Clause(raw, omit_ok=not third_party)
                items = next((got for step in _STEPS if (got := step(cl))), None)
                for item in items or (_note(cl) if cl.remember else []):
                    found.pop(item.key, None)
                    found[item.key] = item
            third_party = third_party or _THIRD.search(raw) is not None
    return list(found.values())
