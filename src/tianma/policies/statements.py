"""Is a message the user stating something about themselves, for how long, and does it take
something back? Pure functions, Chinese and English, no model.

The rule-based extractor (:mod:`tianma.text.extract`) turns a few phrasings into clean keyed
records; this module is deliberately broader and shallower: it only decides that a message *is*
a statement (a wish, a fact about the user, a complaint about an earlier answer, a mood), whether
it is scoped in time (“今天…”, “this week…”: it closes itself when that period ends), and whether
it carries a cue that it revises something said before. Which earlier statement it revises is
decided against the prior statements themselves (:mod:`tianma.memory.statements`), not here.

| kind | examples | lasts |
|---|---|---|
| wish | 以后回答先给结论 · 别给我安排早会 · from now on use metric · please keep it short | until a newer statement on the subject |
| fact | 我是素食者 · 我对花生过敏 · I live in Leeds · I've started eating fish again | until a newer statement on the subject |
| complaint | 上次你推荐的火锅辣得我胃疼 · that workout you gave me wrecked my knees | until a newer statement on the subject |
| mood | 今天好累 · 心情很差 · I'm so hungover | the day it was said |

A wish or fact with a time word lasts that day (今天、今晚、这次, today, tonight, this time, for now),
three days (这几天、这三天、接下来两天, for the next few days), that week (这周, this week) or fourteen
days (这两周, for the next fortnight); “从今天起 /
starting today / from now on” is lasting. Terse news of the moment (“Just landed.”, 刚炒了盘回锅肉,
“brb”: :mod:`tianma.policies.momentary`) lasts that day too, unless it tells a change in the user's life.
Questions, hypotheticals, hearsay, quoted speech, talk about the conversation (“我有个问题想请教”), a
task on a text of this conversation (“把上面那段改成口语化一点”, “turn this into a tweet”),
feedback on the reply (“不对 重新算”, “that's not what I asked”), what a task for this turn says
about the user (“list 5 dinners I can make in a slow cooker”: the material of the task) and a
message that carried a secret (it is a request to keep it) are not statements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, time, timedelta, tzinfo
from typing import Literal

from tianma.policies.momentary import happened_just_now, steps_away
from tianma.text.extract import LISTING_WHAT, RHETORICAL_WHERE, asserted_sentences
from tianma.text.placeholders import SECRET_PLACEHOLDERS

StatementKind = Literal["wish", "fact", "complaint", "mood"]
Period = Literal["day", "days", "week", "fortnight"]


@dataclass(frozen=True, slots=True)
class StatementCue:
    """What kind of statement a message is."""

    kind: StatementKind
    period: Period | None
    """``day`` / ``week`` when scoped in time; None when it lasts until revised."""
    reversal: bool
    """It carries a cue of revising something said before (不对, 不用…了, no longer, actually …)."""
    style: bool
    """It is about how to answer (length, order, tone, language, format): it applies to every turn."""
    loose: bool = False
    """Taken only because it asserts something terse (no wish, fact or complaint rule matched):
    the statement model may still overrule it (:func:`tianma.memory.statements.statement_fields`)."""


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# fmt: off
_LASTING = _rx(r"说(?:了|过)(?:要|别|不要|只要)|优先|尽管|一概|统统|通通|只(?:买|用|看|吃|喝|听|坐|住|要)(?!一)|以后|今后|从现在(?:开始|起)|从今(?:天|日|往后)?(?:开始|起)|从此|往后|每次|每回|总是|一律|永远|一直都|默认|记住|记得|记一下|别忘了|"
               r"\b(?:from now on|going forward|from here on|from here(?=\s*(?:[,.;!]|$))|in (?:the )?future|always|never(?! mind)|every time|whenever|remember|keep in mind|by default|"
               r"starting (?:today|now)|from today)\b")
_RECURRING = _rx(r"每天|每日|每晚|每早|每周|每个?(?:星期|礼拜|月)|每月|天天|"
                 r"\b(?:every (?:single )?(?:day|morning|evening|night|week|month|weekday|weekend|mondays?|tuesdays?|wednesdays?|"
                 r"thursdays?|fridays?|saturdays?|sundays?)|daily|nightly|weekly|monthly)\b")
"""A wish that names its own recurrence (“Send me the forecast every morning” · 每周五提醒我交周报)
stands: in a short message only — a task description mentions days too."""
_DAY = _rx(r"今天|今晚|今早|今儿|今日|今天晚上|今个|这会儿|这一会|(?:这次|这回|这一次)(?![^，,。！!？?]{0,8}?(?:体检|复查|检查|化验|查出|看病|医生|大夫|诊断|是每))|当下|此刻|眼下先|暂时|现在先|"
           r"\b(?:today|tonight|this time|this morning|this afternoon|this evening|right now|for now|for today|at the moment|"
           r"just for now|for the moment|for the time being|temporarily|tonite|all morning|this arvo|for this one|"
           r"for (?:a|the next) (?:few|couple of|couple|\d+) hours)\b")
_WEEK = _rx(r"这周|本周|这一周|这个星期|这礼拜|这个礼拜|这个周末|这周末|(?<![一二三四五六日天末挪改换调推延提移放])(?:到|直到)(?:这?周|星期|礼拜)[一二三四五六日天末](?:为止|之前)?|"
            r"\b(?:this week|this weekend|all week|(?:for|over) the long weekend|(?<!day )(?:until|till|til|through) (?:the weekend|(?:mon|tues|wednes|thurs|fri|satur|sun)day))\b")
_FORTNIGHT = _rx(r"(?:这|接下来的?|未来)(?:两|二)(?:周|个星期|个礼拜)|\b(?:this fortnight|(?:for )?(?:the next|a) fortnight|(?:for )?the next (?:two|2) weeks)\b")
_DAYS = _rx(r"(?:最近|近|未来|接下来的?|这)(?:两三|[两二三四五几]|\d)天|这阵子|这段时间先|"
            r"\b(?:these (?:few |couple of |two |three |\d+ )days|(?:for |over )?the next (?:few|couple of|two|three|\d+) days|"
            r"next (?:few|couple of|two|three|\d+) days|for a few days|for a couple of days|(?:for )?(?:the next |a )day or two)\b")
_MOOD = _rx(r"心情|好累|太累|很累|累死|累了|累瘫|累趴|好困|很困|困死|困成|烦死|好烦|很烦|烦躁|暴躁|难受|疼|痛|感冒|发烧|咳嗽|鼻塞|嗓子|拉肚子|"
            r"闹肚子|生病|病了|不舒服|晕车|失眠|没睡好|没睡醒|熬夜|通宵|宿醉|喝多了|生理期|经期|姨妈|例假|郁闷|焦虑|伤心|难过|沮丧|低落|心累|"
            r"没精神|没胃口|吃不下|没力气|压力(?:好|很|太)?大|崩溃|气死|生气|上火|憋屈|委屈|心慌|发慌|慌得|空落落|脑子(?:很|好|有点)?乱|"
            r"饿(?:死|得|过头|坏|晕)|腿麻|越想越气|"
            r"\b(?:emo|hungover|hung over|tired|exhausted|shattered|drained|knackered|wiped out|worn out|burn(?:ed|t) out|run down|"
            r"stressed|anxious|nervous|upset|sad|grumpy|cranky|sleepy|sick|ill|unwell|under the weather|flu|a cold|fever|"
            r"headache|migraine|cramps|nauseous|jet-?lagged|sore|aching|achy|in a (?:bad|good|terrible|foul|weird) mood|rough (?:day|night|week)|"
            r"(?:feel|feeling|felt) (?:sick|awful|down|low|blue|terrible|rough|crap|crappy|rubbish|off|meh|great)|"
            r"freaking out|panick(?:ing|ed)|fuming|pissed off|furious|so angry|gutted|heartbroken|devastated|drunk|tipsy|"
            r"an emotional wreck|(?:very|so|a bit|bit|really) emotional|overwhelmed|(?:still |I'm )shaking|light-?headed|dizzy|bloated|crying|in tears|bored|homesick|giddy|"
            r"(?:having )?a (?:bit of a )?wobble|snappy|can'?t sleep|didn'?t sleep)\b")
_NOT_MOOD = _rx(r"受够了|(?:看着|看得|读着|听着|听得)(?:头疼|头大|头晕|累|眼花|难受)|一\S{0,6}就|每次|容易|\bwhenever\b|\bevery time\b|"
                r"\b(?:tired of|sick of|sick and tired|bored (?:of|with|by)|(?:get|gets|getting) (?:\w+ )?(?:overwhelmed|bored|dizzy|bloated|emotional|panicky)"
                r"|you(?:'d)? (?:recommended|suggested|sent|picked|booked|gave|chose|found|planned))\b|[你您](?:上次)?(?:推荐|给|安排|选|订|找)的")
"""Not a passing state: one that comes back (一…就, whenever), a taste (sick of, bored of), or a
feeling about something the assistant recommended — that is a complaint (“the hike you picked had
me panicking on the ridge”)."""
_LEAD_TIME = r"(?:今天|今晚|这次|这周|本周|这几天|这两天|以后|今后|平时|周末|晚上|早上|\s|，|,|(?:today|tonight|this week|this time|for now|from now on|going forward)\b)*"
_DIRECTIVE = _rx(rf"^{_LEAD_TIME}(?:请|麻烦你?|你|也|都|就|还是|直接|千万|可以)*(?:说话|讲话|回答|回复)?(?:别|不要|不用|不必|甭|少给|称呼我|叫我)"
                 rf"|^{_LEAD_TIME}(?:ple+a+s+e+\s+|pls\s+|kindly\s+|just\s+)*(?:don't|do not|stop|never(?! mind)|always|avoid|skip|call me|no more|quit)\b"
                 r"|^(?:ple+a+s+e+|pls|plz)\W+no (?!(?:I|you|it|that|this|the|not|one|problem|worries|thanks|idea|way|rush|clue|need)\b)\w")
"""A standing wish to the assistant: a prohibition (别…, don't…), always/never, how to address the
user. A positive request (推荐一款耳机, suggest a film) is for this turn, unless it says it lasts."""
_STYLE_ORDER = _rx(r"^(?:请|你)?(?:用|写|回答|回复|分|按)[^，,]{0,10}(?:段落|分点|要点|列表|表格|步骤|大白话|口语|正式|简短|简洁|详细)"
                   r"|^(?:please\s+)?(?:(?:write|put|keep|format|lay) (?:it|them|things|everything|(?:your )?(?:answers|replies))(?: out| up)?|"
                   r"(?:answer|reply|respond|talk to me|explain things)(?: to me)?)\b.{0,30}\b(?:paragraphs?|bullet(?: point)?s?|lists?|numbered|prose|"
                   r"tables?|headings?|short|brief|concise|plain (?:english|language|words)|detailed|formal|casual|emojis?)\b")
"""An order about the form of answers (用分点回答 · Write it out in paragraphs) is a standing wish, not this turn's task."""
_TOPIC_REQUEST = _rx(r"^(?!帮|给|请|你|我|麻烦|明天|后天|下周|下个|待会|等下|一会|上午|中午|下午|晚上|早上|今晚|今早)[\u4e00-\u9fff]{2,8}?(?:都|就|也)?(?:给我|帮我|(?:跟|对)我(?=说|讲|聊|解释|介绍|用|别|少|多|客气|直接))")
"""A request after its topic is a standing one: 住宿给我推便宜的青旅就行 · 术语给我翻成中文 (but
帮我推荐个餐厅 and 明天给我订个酒店 are for one turn; 跟我 only when it says how to talk to me: 同事跟我换班
is what happened)."""
_KINDS_OF_THINGS_ZH = r"剧|片子|电影|纪录片|书|小说|漫画|视频|up主|UP主|博主|歌|音乐|播客|有声书|节目|动画|番|综艺|相声|动作|菜|游戏|零食|饮料"
_TASTE = _rx(rf"(?:来|推|推荐|找|给我找)(?:点|些)[^，,。！!？?]{{0,12}}?(?:{_KINDS_OF_THINGS_ZH})"
             r"|推(?:荐)?(?![个一])[^，,。！!？?]{1,12}的(?:就行|就好|就可以|即可)"
             rf"|多(?:给我)?(?:推荐|推|找找?|来点|发)[^，,。！!？?]{{0,12}}?(?:{_KINDS_OF_THINGS_ZH}|这一?类|这种|类似)"
             r"|^(?:more|some|any)?\s*[\w' -]{0,24}\b(?:novels|books|shows|series|films|movies|documentaries|podcasts|songs|music|games|recipes|audiobooks)\b[,!.]?\s*(?:please|pls|plz)\b")
"""A request for things of a kind, not one thing: the kind is a taste that holds (给我来点悬疑推理的书，越烧脑越好 ·
多推荐撸铁的动作 · 现在推荐iOS的就行 · “Crime novels, please.”), while 推荐一部电影, 推荐个便宜的就行 and 来点土味情话
are for this turn."""
_HABIT = _rx(r"(?:的时候|时候|每当|凡是|只要是?)[^，,。]{0,20}?(?:请|就|都|要|得|用|写|给|别|不要|按|先|多|少)"
             r"|^(?:when(?:ever)?|any ?time|each time|every time) (?:you|I)\b[^,]*,")
"""A standing wish phrased as a habit: 给我写代码的时候注释写中文 · When you show me code, please use R."""
_REMINDER_TIMES = _rx(r"(?:\breminders\b|\bremind me (?:of |about )?(?:stuff|things|everything)\b"
                      r"|\bremind me (?:of|about) (?:(?:my|his|her|our|their|the|all|any) )?(?:\w+ ){0,2}\w+s\b(?=.{0,30}\b(?:ahead|in advance|beforehand)\b)|提醒(?:我)?的事|要提醒的|提醒(?:都|就|挪|改|放|时间))"
                      r".{0,40}(?:\b(?:morning|evening|night|afternoon|noon|midday|\d{1,2}(?::\d\d)?\s*(?:am|pm)|before|after|ahead|in advance)\b|早上|晚上|上午|下午|中午|前一天|提前|点)"
                      r"|(?:\b(?:morning|evening|night|afternoon|\d{1,2}(?::\d\d)?\s*(?:am|pm))\b|早上|晚上|上午|下午|中午).{0,20}\b(?:for |w(?:ith|/)? )?reminders\b")
"""When reminders in general should come (“no reminders before 2pm pls”, “Late morning for reminders,
please”, “提醒我的事早上六点半前说”): a standing wish, whatever mood the words carry; a reminder of one
thing (“remind me at 5 to call the vet”) is an errand, and a wish scoped in time
(“no work reminders till monday”) holds for its period."""
_PROHIBIT = _rx(r"(?:别|不要|不用|不必|甭|不需要)再?(?:给|帮|替|跟|和)?我|(?:别|不要|不用)再?(?:推荐|推|安排|排|发|提醒|约|订|留)"
                r"|(?:别|不要|不能|不许)(?:超过|超出|高于|低于|少于|多于|贵于)|预算.{0,6}(?:以内|以下|之内|左右|封顶|上限|不超过)"
                r"|\b(?:nothing (?:over|above|under|more than|pricier than)|keep it under|no more than|my budget is|budget of)\b"
                r"|\b(?:no need to|you don't (?:need|have) to|there's no need to|you can stop)\b")
"""A prohibition anywhere in a clause, after a topic: 中午那段别给我塞会 · 中午不用给我留午休了."""
_STYLE_REQUEST = _rx(rf"^{_LEAD_TIME}(?:请|你|以后|回答|回复|说话|解释)*.{{0,6}}(?:简短|简洁|详细|短|长|慢|通俗|正式|随意|直接).{{0,4}}(?:一点|一些|点|些)"
                     rf"|^{_LEAD_TIME}(?:please\s+)?(?:keep|make) (?:it|your (?:answers?|replies|responses)|answers?) (?:short|brief|concise|simple|detailed|longer)")
_STANDING = _rx(r"能([\u4e00-\u9fff]{1,4})就\1|(?:一定|必须|务必)(?:要|得)|[\u4e00-\u9fff]{1,2}(?:一)?(?:点|些)(?:也)?(?:无所谓|没事|没关系|也行|也可以|都行|不要紧)"
                r"|^(?!帮|给|请帮|麻烦|把)[^，,把]{0,8}?用(?:繁体|简体|中文|英文|表格|列表|分点|拼音|大白话|白话|[A-Za-z+#]{1,12})(?:字)?(?:写|回|说|回答|回复|列|讲|表示|来)?(?:吧|哈|啊|呀|嘛|就行|就好|好了)?$"
                r"|提醒(?:都|一律|统一|全)?(?:放|安排|设|定|挪)在?|^(?:少|多)(?:来|放|用|说|写|加|给)?(?:一点|一些|点|些)(?!几)"
                r"|^(?:就|你|都)?(?:直接(?:说|讲|写|报|给|上|用|列|告诉)|直奔主题|开门见山)"
                r"|\b(?:over anything else|above (?:all|everything) else|more than anything)\b")
"""Idioms of a standing wish: 能高铁就高铁 · 推荐吃的一定要辣 · 贵点无所谓 · 代码用python写 · 提醒都放早上 ·
少点客套话 · 直接报数 · Eastern European dishes over anything else — unless the message names the
occasion it is for (:data:`_SITUATION`: 明天一定要提醒我)."""
_STYLE_VERDICT = _rx(r"\b(?:would be (?:welcome|nice|great|good|appreciated|better)|(?:is|are) (?:welcome|preferred|good|better|best|fine|great|ideal)"
                     r"|works? (?:better|best) for me)\b")
"""An opinion of a way to answer (“long thorough answers are good” · “a bit of humour in your
replies would be welcome”): a wish when it is about how to answer (:data:`_STYLE`) and not a
verdict on this answer (:data:`_PRAISE`)."""
_PRAISE = _rx(r"^(?:your|this|that|these|those|the|it|it's|that's)\b")
_SELF = _rx(r"我的?[\u4e00-\u9fff]{1,3}(?:有点|有些|很|太|比较|挺|特别|不太|一直|偏)|我的?(?!意思|问题|想法|说的|问的|指的)[\u4e00-\u9fff]{2,4}是(?!不是)|我(?:现在|目前|已经|平时|一般|一直|其实|真的|也|还|又|开始|重新|就|都|倒|可|向来|从来|本来|最近)*(?:是|不是|不|没|很|挺|比较|特别|超|最|喜欢|讨厌|爱|怕|受不了|吃|喝|用|住|在|对|习惯|偏好|宁愿|宁可|更|倾向|想要|希望|需要|要|只|能|会|戒|有|家|的)"
            r"|\bI(?:'m|'ve| am| have| do| don't| do not| can't| cannot| can| never| always| usually| only| really| actually| now| still| just| no longer| used to|'d rather| would rather| prefer| like| love| hate| dislike| eat| drink| use| live| work| need| want| started| stopped| quit| switched| gave up| moved| got| became)\b"
            r"|\bmy (?:\w+ ){0,2}(?:is|are|was)\b")
_COMPLAINT = _rx(r"(?:上次|上回|那次|之前|昨天|前两天|前几天|[你您](?:上次|上回)?(?:推荐|给|说|安排|选|订|写|发)的|[你您](?:每次|老是|总是|又|都)(?:推|提|给我推|安排|说))"
                 r".{0,40}?(?:太|得我|害我|害得|让我|弄得|搞得|受不了|难受|不行|没法|白跑|踩雷|后悔|难吃|难喝|无聊|看不懂|头大|没睡|睡不着|失望|坑|吵|贵|退了|扔了|坏了|吐|拉肚子|过敏|疼|痛|晕|腻|咸|辣|饿了|弃了|尬|肿|折腾|遭罪|受罪|没味)"
                 r"|\b(?:last time|the (?:\w+ ){0,3}you (?:recommended|suggested|gave|picked|booked|chose|sent|wrote)|that (?:\w+ ){0,3}you (?:recommended|suggested|gave|picked|booked|chose|sent|wrote))\b.{0,60}?"
                 r"\b(?:wrecked|ruined|too|awful|terrible|hated|couldn't|made me|killed|hurt|boring|useless|confus|lost me|overwhelm|waste)")
_CHANGE_WORDS_ZH = r"改主意|变卦|不再|别再|再也不|不用.{0,12}了|不需要.{0,12}了|还是.{0,16}吧|改回|又能|又可以"
_NO_LONGER_DOING = r"不(?:休|去|喝|吃|练|跑|抽|追|熬)了"
_CHANGE_WORDS_EN = r"no longer|not anymore|any ?more|changed my mind|on second thought|these days|started|stopped|quit|gave up"
"""The words of a change of mind, shared by :data:`_REVERSAL` and :data:`_CHANGE_OF_MIND`."""
_REVERSAL = _rx(rf"(?<!对)不对|不是这样|错了|搞错|说错|{_CHANGE_WORDS_ZH}|{_NO_LONGER_DOING}|改成|改为|换成|改一下|不要再|其实|算了|又开始|重新|恢复|能.{{0,6}}了$|可以.{{0,10}}了$|"
                rf"\b(?:{_CHANGE_WORDS_EN}|actually|change of plan|scratch that|instead|again|forget what I said|wait|that's wrong|I was wrong|used to|switched|back to)\b|"
                r"(?<!right )(?<!for )(?<!just )(?<!until )(?<!till )(?<!by )\bnow\b(?=\W*$|\s*[.!;])")
_STYLE = _rx(r"回答|回复|答案|解释|讲解|讲|说话|语气|口吻|格式|列表|段落|要点|分点|分条|步骤|例子|举例|表情|字数|简短|简洁|详细|啰嗦|结论|英文|中文|繁体|术语|专业词|专业名词|大白话|白话|通俗|缩写|客套|代码注释|markdown|"
             r"\b(?:answers?|repl(?:y|ies)|responses?|respond|explain|explanations?|tone|format(?:ting)?|bullets?|bullet points|lists?|paragraphs?|prose|steps?|examples?|emojis?|short|brief|concise|detail(?:ed)?|formal|casual|jargon|technical terms|plain (?:english|words|language)|layman's terms|summary|tl;?dr|code comments|in (?:English|Chinese|Spanish|French|German|Japanese))\b")
_CLAUSES = re.compile(r"[，,；;：:]|(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])|\s+(?:so|and|but)\s+", re.IGNORECASE)
_REQUEST = _rx(rf"^{_LEAD_TIME}(?:请|你|都|就|也)*(?:帮我|给我)?(?:推荐|推|安排|按|用|换成|改成|只|做)"
               rf"|^{_LEAD_TIME}(?:please\s+)?(?:give|suggest|recommend|use|plan|show|make|keep|stick to|switch to|book)\b")
_CORRECTION = _rx(r"(?<!对)不对|错了|搞错|说错|记错|\b(?:that's wrong|that was wrong|I was wrong|got that wrong|changed my mind|scratch that|forget what I said|on second thought)\b")
"""The user says outright that something said before was wrong: never a loose statement."""
_ABOUT_THE_ANSWER = _rx(r"重新(?:算|来|写|做|答|回答|说|讲|检查)|我(?:说|问|指)的是|(?:你|您)(?:刚才|上面|这)?(?:说|算|写|讲|答|翻)(?:错|得不对)|(?:这个|你的|刚才的?|上面的?)(?:回答|答案|结果|算法)|不是我(?:问|要)的"
                        r"|(?:你|您)(?:在)?第[一二三四五六七八九十\d]+(?:步|行|题|段|句)|第[一二三四五六七八九十\d]+(?:步|行|段)(?:没|不|怎么|为什么|为啥)|答案应该是|(?:你|您)(?:漏|落)了(?:一个|一步|个)"
                        r"|\b(?:double[- ]check|re-?check|recalculate|redo it|try again|(?:that's|that is|thats) not what I (?:asked|meant|wanted)|sounds wrong|you got (?:it|that) wrong|I meant|you (?:forgot|missed|skipped|dropped) (?:to|the|a|one)|why did you|(?:explain|redo|clarify|expand on|go over) (?:the )?(?:step|part|point|line|paragraph|bit) (?:\d+|one|two|three|four|five)|I (?:didn't|don't|did not|do not) (?:get|understand|follow) (?:why|how|what|step|your|the last)|the (?:answer|result) (?:is|should be) -?\d)\b")
"""Feedback on the reply this turn answers (不对 重新算 · 你刚才说错了 · 错了 我说的是农历 · 你第三步算错了 ·
that's not what I asked · I meant pounds, not dollars · you forgot to carry the one · why did you use
recursion there · go over step 2 again): when no wish or fact rule reads anything, no statement about
the user."""
_DO_THIS = _rx(r"^(?:请|麻烦你?|你)?(?:帮我|帮忙|教我|替我|(?:给我)?(?:写|列|算|翻译|总结|检查|改|画|编|起草|整理)(?:一|几|两)?(?:个|篇|段|份|封|下|首|张|句|条))"
               r"|^(?:please\s+|kindly\s+|pls\s+)?(?:help|write(?!\s+(?:in|with|like|more|less)\b)|draft|list|explain|translate|summari[sz]e|calculate|calc|compute|work out|figure out|"
               r"arrange|sort out|put together|come up with|brainstorm|rank|teach|proofread|compose|outline)\b")
"""The opening of a task for this turn (“give me”, “show me”, 推荐 and “write in …” are left out:
“Give me distances in miles, my new Garmin came set to imperial”, “推荐东西别超过200块” and “Kindly
write in proper paragraphs” ask for lasting ways)."""
_SWITCH = _rx(r"改回|改成|改为|换成|换回|\b(?:switch(?: me)?(?: back)? to|go back to|change (?:it|that|this|them) to)\b")
"""A wish to change what was asked before (算了，还是改回先说结论吧 · Switch me back to metric)."""
_PERMANENT_DAY = _rx(r"从今(?:天|日)(?:开始|起)|\b(?:starting today|from today|as of today)\b")
_POLITE = _rx(r"^(?:can|could|would|will) you (?:please )?|^(?:能不能|可不可以|能否|可以|麻烦)(?:你)?(?:以后|今后|每次)"
              r"|^(?:能不能|可不可以|能否)(?:你)?(?=别|不要|少|不再)")
_STYLE_ASK = _rx(r"^(?:你的?)?(回答|回复|说话|讲话)(?:能不能|可不可以|能否|可否)")
"""回答能不能分点列出来 asks for a way of answering from now on, not whether it can be done."""
# fmt: on


def _never_a_statement(text: str) -> bool:
    """Talk about the conversation, a paste, or a message that carried a secret (a request to
    keep it): whatever the rules or the model read in it."""
    return bool(_META.search(text) or _PASTED.search(text) or any(m in text for m in SECRET_PLACEHOLDERS.values()))


def classify_statement(text: str) -> StatementCue | None:
    """The statement a user message makes, if it makes one (see the module table)."""
    said, text = text, _I_MEAN.sub("", text)  # “我的意思是，点两杯奶茶” says again what it asked
    if _never_a_statement(text) or _reminder_errand(text) or _task_on_this_text(text) or _work_on_one_piece(text):
        return None
    if (lasting := _work_for_this_turn(text)) is not None:
        if not lasting:
            return None
        said = text = lasting
    sentences = asserted_sentences(text) + _polite_requests(text) or _asserted_clauses(text)
    if not sentences:
        return None
    kinds: list[StatementKind] = []
    clauses = [c for s in sentences for c in _CLAUSES.split(s) if c.strip()]
    for s in [*sentences, *clauses]:
        body = s.strip(" \t。！？!?；;.,，")
        if _COMPLAINT.search(body):
            kinds.append("complaint")
        elif _MOOD.search(body) and not _NOT_MOOD.search(body) and not _LASTING.search(body):
            kinds.append("mood")
        elif (_DIRECTIVE.search(body) or _LASTING.search(body) or _STYLE_REQUEST.search(body)
              or _HABIT.search(body) or _PROHIBIT.search(body) or _STYLE_ORDER.search(body)
              or _TOPIC_REQUEST.search(body) or _SWITCH.search(body) or _REMINDER_TIMES.search(body) or (_RECURRING.search(body) and _terse(text) and not _DO_THIS.match(text.strip()) and not _asks_for_information(text))
              or (_STANDING.search(body) and not _SITUATION.search(text))
              or (_STYLE_VERDICT.search(body) and _STYLE.search(body) and not _PRAISE.match(body) and _terse(text))
              or (_TASTE.search(body) and _terse(text))):
            kinds.append("wish")
        elif _REQUEST.search(body) and _scoped_in_time(text):
            # a request with a time scope is a wish for that period: 这周做饭给我推荐点小孩子爱吃的
            kinds.append("wish")
        elif _SELF.search(body):
            kinds.append("fact")
    if not kinds and _ABOUT_THE_ANSWER.search(said):
        return None  # “不对 重新算” · “that's not what I asked”: feedback on the reply, nothing about the user
    loose = not kinds and not _CORRECTION.search(text)  # "No, that's wrong. …": the user says it revises
    if not kinds and _terse(text) and not _asks_for_information(text) and (plain := [b for b in sentences if _is_plain_statement(b)]):
        # what people say about themselves is mostly terse and free ("Python, please.", "只买指数
        # 基金", "Bullet points. No essays."): a short assertion that is neither chatter nor a task
        # for this turn is taken as a statement; which earlier one it revises is decided by meaning
        kinds.append("fact")
        sentences = plain
    if not kinds or (set(kinds) == {"fact"} and (_only_context_of_a_request(text) or _fact_in_a_task(text))):
        return None
    kind: StatementKind = next(k for k in ("wish", "complaint", "fact", "mood") if k in kinds)
    joined = " ".join(sentences)
    period = _period(joined, kind, moody="mood" in kinds and kind != "complaint")  # the pain a past answer caused
    if period is None and kind == "fact" and (steps_away(text) or (loose and not says_it_recurs(text))) and happened_just_now(text):
        period = "day"  # “Just landed.” · 刚炒了盘回锅肉 · “brb”: news of the moment, said tersely
    return StatementCue(
        kind=kind,
        period=period,
        reversal=_REVERSAL.search(joined) is not None,
        style=_STYLE.search(joined) is not None,
        loose=loose,
    )


_PASTED = re.compile(
    r"```|^\s*(?:def \w+\(|class \w+[:(]|import \w|from [\w.]+ import |#include|SELECT .+ FROM |</?[a-z]+[ >])"
    r"|[{};]\s*$|[│├└┌]|^\s*(?:[-\w\"]+\s*)?[{\[]\s*$",
    re.MULTILINE,
)
"""Code, markup or a pasted log: material for a task of this turn, never a statement about the
user (a statement is said in words, not in braces and semicolons)."""
TERSE_WORDS = 32
"""Longest message (English words, or Chinese characters ÷ 1.5) the terse-assertion rule takes as
a statement: what people say about themselves without a cue is a line, not a paragraph (a pasted
text, an essay to edit, a long task description is not about them)."""
_WORDS = re.compile(r"[A-Za-z0-9']+")
_HAN = re.compile(r"[\u4e00-\u9fff]")


def _size(text: str) -> float:
    """English words, or Chinese characters ÷ 1.5."""
    return len(_WORDS.findall(text)) + len(_HAN.findall(text)) / 1.5


def _terse(text: str) -> bool:
    lines = [x for x in text.splitlines() if x.strip()]
    return len(lines) <= 2 and _size(text) <= TERSE_WORDS


LONG_WORDS = 40
"""Longer than this (:func:`_size`), a message is a prompt for a piece of work — a task with its
material and its requirements, a question with its whole background — unless it says it lasts or
recurs: what people tell an assistant about themselves to keep is a line or two (the dev users'
preferences: 36 words at most, the two longer ones say 以后 / only want). Chosen on the dev traffic
of ``tests/fixtures/chat_traffic/``, with the other rules of 2026-12-07's third session (README,
“A chat client's long prompts”: dev traffic read as lasting 80 → 17 of 200 English, 92 → 36 of
200 Chinese)."""
_ROLE = _rx(r"^(?:(?:ok|okay|hi|hey|now|so|alright)\W+)*(?:(?:I want you to|I'd like you to|can you|could you|please|let's|lets)\s+)*"
            r"(?:(?:act|roleplay|role-play|role play|play) (?:as|the role|a|an|my)\b|be (?:a|an|my) (?!\w+er\b)|(?:you are|you're) (?:now |going to be )?(?:a|an|my)\b"
            r"|pretend|imagine you|play (?:a|an) (?:game|text adventure|round)|do a (?:role ?play|mock))"
            r"|^(?:我们|咱们)?来?玩(?:个|一个|一局|一把|一下)?[\u4e00-\u9fff]{0,6}游戏"
            r"|^(?:请|现在)?(?:你|您)?(?:来)?(?:扮演|假设你是|假装|模拟一下|当我的|当一(?:个|名|位))|^(?:你|您)现在是")
"""A role for this conversation (“Act as a Linux terminal”, “You are a strict interviewer”, 你扮演
面试官, 假设你是我的数学老师): how to play it is no lasting wish of the user."""
_BEYOND_THIS_CHAT = _rx(r"以后|今后|往后|从现在(?:开始|起)|从今(?:天|往后)?(?:开始|起)|记住|\b(?:from now on|going forward|in (?:the )?future|remember|starting (?:today|now))\b")
"""What says a wish holds beyond this conversation — not “always”, “never”, “every time”, 每次:
“never break character” and 每次描述场景后给我3个选项 say how to play a role, “she always steals my
hoodies” and 每次我回老家 tell a piece's story."""
_TO_THE_ASSISTANT = _rx(r"你|您|给我|帮我|跟我|回答|回复|推荐|\b(?:you|your|me|answers?|repl(?:y|ies)|recommend\w*|suggest\w*)\b")
"""A sentence of a long prompt that says it lasts must also speak to the assistant: “在今后的学习和
生活中，我要继续努力” in a pasted essay and “记住密码在safari上失效” in a weekly report do not."""
_ONLY_WANT = _rx(r"\b(?:I|we) only (?:want|eat|drink|use|read|listen to|watch|buy)\b")


def _work_for_this_turn(text: str) -> str | None:
    """What is read of a prompt for a piece of work: of one longer than :data:`LONG_WORDS`, the
    sentences that say to the assistant that they hold beyond this conversation
    (:data:`_BEYOND_THIS_CHAT`, :data:`_TO_THE_ASSISTANT`: “你以后回答我的时候别夹英文单词”), “I only
    want …”, or name a period (a passing state told at length is still one: “… I'm running on
    empty today, so keep things short”); of a role to play (:data:`_ROLE`), nothing unless it says
    it holds beyond this conversation, recurs (每天早上给我发训练计划) or names a period. None when
    it is no such prompt: read as a whole."""
    stripped = text.strip()
    if _size(stripped) > LONG_WORDS:
        return " ".join(s.strip() for s in _SENTENCES.findall(stripped)
                        if (_BEYOND_THIS_CHAT.search(s) and _TO_THE_ASSISTANT.search(s)) or _ONLY_WANT.search(s)
                        or _scoped_in_time(s))  # fmt: skip
    if _ROLE.match(stripped) and not (_BEYOND_THIS_CHAT.search(stripped) or _RECURRING.search(stripped)
                                      or _scoped_in_time(stripped)):  # fmt: skip
        return ""
    return None


_META = _rx(r"^\W*(?:您好|你好|hi|hello|hey)?\W*(?:我)?(?:有个|有一个|有几个)(?:小)?问题|想(?:问|请教)|请教(?:一下|你)|问(?:你|您)一下"
            r"|\b(?:(?:I have|I've got|got) (?:a|one|another) (?:quick |small )?question|quick question|can I ask)\b")
"""Talk about the conversation itself (我有个问题想请教一下 · quick question): no statement."""
_CHATTER = _rx(r"^(?:(?:very|so|really|pretty) (?:good|nice|cool|funny)|good one|"
               r"好的?|嗯+|哦+|噢|行|可以|收到|谢谢|谢啦|多谢|哈+|嘿+|对|是的|没事|ok|okay|k|thanks?|thank you|thx|ty|cool|nice|great|sure|yes|yeah|yep|no|nope|lol|haha|got it|sounds good|fine|alright|right|hi|hello|hey|bye|good (?:morning|night|evening|afternoon)|早|晚安|你好|在吗)\W*$")
_ACK = _rx(r"^(?:好的|好滴|好嘞|谢|多谢|感谢|哈|呵|嘻|嗯|哦|噢|唔|收到|明白|懂了|对对|等(?:我|会|一下)|救命|(?:那)?算了|"
           r"ok\b|okay|thank|thanks|thx|perfect|great|nice|cool|awesome|lovely|haha|ha\b|hah|lol|lmao|omg|sorry|brb|right,|fair|wow|yay|ugh|oops)")
_SMALL_TALK = _rx(r"下雨|下雪|刮风|天凉|天冷|好冷|好热|太冷|太热|天气|空调|困死|zzz|"
                  r"\b(?:rain(?:ing|y)?|snow(?:ing)?|drizzl\w*|pouring|cold out|hot out|weather|sunny|grey|gray|coffee's|story of my life|back to it|i'm back|hope (?:you're|you are|all is) well|how are you)\b")
_TASK = _rx(r"^(?:请|麻烦|你)?(?:帮我|给我|替我)?(?:(?:发|回)(?:条|个|一条|一个|封|一封|段|一段)(?![^，,。]*(?:就行|就好|就可以|即可|就够))|推荐(?![的过])|写|做|安排|查|找|搜|订(?!货|单|阅|婚)|规划|计划|解释|讲讲|讲一下|说说|分析|翻译|总结|算(?!了)|计算|列|比较|介绍|想|出|改(?!主意|变|了|成|为|回|到)|看看|检查)"
            r"|^(?:please\s+)?(?:help|write|make|plan|find|search|look up|explain|tell me|give me|show me|suggest|recommend|translate|summari[sz]e|compare|list|draft|check|calculate|compute|create|generate|teach|walk me through"
            r"|re-?write|rephrase|paraphrase|convert|complete|continue|simplify|describe|design|implement|solve|fix|debug|refactor|optimi[sz]e|improve|edit|proofread|"
            r"act as|pretend|imagine|define|outline|classify|extract|analy[sz]e|evaluate|predict|simulate|compose|sort|count|build|provide|prepare|review|prove|derive)\b"
            r"|^(?:an? )?(?:regex|regexp|regular expression|(?:docker[- ]?compose|yaml|config|nginx|systemd|make) ?file|dockerfile|(?:bash|shell|python|powershell) (?:script|one-liner)|sql query|cron (?:expression|job)|one-liner)"
            r"(?: \w+){0,2}? (?:to|for|that|which)\b")


_TASK_ANYWHERE = _rx(r"(?:推荐(?![的过])|帮我|给我|替我|订|(?<![0-9一二三四五六七八九十两几半着少多快慢短长小大轻淡简细])点|设|安排|排|挑|配|找|看看)(?:个|一个|一下|两个|一部|一杯|一款|些|点)?[^，,。]{0,12}吧?$|晚安|明天见|您好|你好|请教"
                     r"|(?<![别不])(?<!可以)提醒我(?!的)(?=[\u4e00-\u9fff])|(?:写|做|画|编|列|翻译|生成|起草|整理)(?:一|几|两)?(?:封|篇|段|份|首|张|句)|再(?:讲|说|写|来|解释|翻译)一(?:遍|次|下)"
                     r"|\b(?:remind me|set (?:up|something)|book|schedule|i need|need (?:a|an|some|something|to(?! be\b))|i want|i'd like|looking for|"
                     r"any (?:ideas|suggestions|tips)|talk to me|what's|how (?:do|should|can) i|where do i|good morning|morning)\b")


_SITUATION = _rx(r"明天|后天|大后天|下周|下个?星期|下个月|月底|周[一二三四五六日末]|星期[一二三四五六日天]|礼拜[一二三四五六日天]|待会|一会儿?|等下|过几天|年后|节后|放假|"
                 r"我(?:想|需要|打算|准备|计划|要去|要在|得去|在找|要(?:做|写|准备|交|讲|办)(?:个|一个|份|一份|篇|场)?)|手(?:里|上|头)有"
                 r"|\b(?:tomorrow|next (?:week|month|year|weekend|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|this (?:weekend|evening|afternoon)"
                 r"|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|the \d+(?:st|nd|rd|th)?)|before work|after work|after the holidays"
                 r"|in (?:an hour|a few (?:hours|days)|\d+ (?:minutes|hours|days))|I need|I want|I'd like|I would like|I'm (?:looking for|trying to|planning|going|visiting|heading|off to)"
                 r"|I(?:'ve| have)(?: got)? (?:[£$€¥]\s?)?\d)")
"""What only holds for this occasion: a day, a plan, a need (“I need to get to Edinburgh on the
14th”, “I have 30 minutes before work”, “我下周去成都出差”) — unlike who the user is (“I'm
vegetarian. What should I cook?” stays a statement)."""
_ERRAND = _rx(r"^(?:please\s+|pls\s+)?(?:set (?:up |something|a reminder|an alarm)|remind me|book|schedule|order)\b|^(?:请|麻烦)?(?:提醒我|帮我设|设个|订个|帮我订)")
"""An errand for this turn at the start of a message."""
_REMINDER_ERRAND = _rx(r"^(?:请|麻烦你?|你)?(?:记得|记着|别忘了|到时候?)(?:提醒|叫|喊|让)我(?!的事)|^(?:请|麻烦你?|你)?帮我(?:设|定|订)(?:个|一个)提醒"
                      r"|^(?:please\s+|pls\s+)?(?:remember|don't forget) to remind me\b")
"""“Remember to remind me of one thing” (记得提醒我给妈妈打电话 · 帮我设个提醒…): an errand, whatever 记得 says —
unless it names its own recurrence or when reminders in general should come."""
_ERRAND_AT_END = _rx(r"(?:提醒我|记着|记一下|别让我忘了?)\W*$|\b(?:remind me|don'?t let me forget)\b\W*$|^(?:please\s+|pls\s+)?don'?t let me forget\b")
_ONE_DAY = _rx(r"明天|后天|(?:这|下)?周[一二三四五六日末]|(?:这|下)?星期[一二三四五六日天]|\d+号|\d+月\d+|"
               r"\b(?:tomorrow|tonight|(?:on |this |next )?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|on the \d+(?:st|nd|rd|th)?|"
               r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w* \d+)\b")
"""A reminder asked at the end of a message about one day (明天要进一批海鲜 提醒我 · “pediatrician visit on
march 3, dont let me forget”): an errand; 会议前半小时提醒我 says when reminders come, a standing wish."""
_AS_USUAL = _rx(r"还是|都|也|每|最近|一般|平时|\b(?:always|usually|every|as usual|these days)\b")
"""A day said as a habit (房租还是周五那天提醒我 · 周末有事也直接提醒我): not one day's errand."""
_ABOUT_THIS_TEXT = _rx(r"^(?:请|麻烦你?|你)?(?:帮我)?(?:把|将)\s*(?:这|那|上面|上边|下面|刚才|以下|前面|[\"“「『《])"
                       r"|^(?:(?:can|could|would) you\s+)?(?:please\s+)?(?:turn|put|make|redo|rewrite|fix|translate|summari[sz]e|shorten|cut|"
                       r"proofread|reword|rephrase|convert|check|tidy|polish)\s+(?:up\s+)?(?:this|these|that|those|it|them|the above)\b"
                       r"|^(?:(?:can|could|would) you\s+)?(?:please\s+)?(?:fix|translate|proofread|rewrite|reword|rephrase|summari[sz]e|check|polish)\b"
                       r"[^:：\n]{0,40}[:：]\s*['\"‘“「]")
"""A task on a text of this conversation (把上面那段改成口语化一点 · turn this into a polite decline:
'…' · fix the grammar: '…'): what it asks of that text is no statement about the user."""
_EDIT_THE_ANSWER = _rx(r"^(?:(?:ok|okay|good|great|nice|thanks|thank you|cool|hmm+|可以|行|好的?|不错|谢谢)\W+)*(?:"
    r"(?:再|重新)(?:短|长|简单|简洁|正式|口语化|通俗|详细|具体|精简|来|写|改|换|说|讲|解释|润色|生成|翻)"
    r"|换(?:个|一个|种|一种|几个)(?:说法|写法|开头|结尾|标题|风格|角度|语气|例子)"
    r"|用(?:更|再)?(?:简单|通俗|浅显|直白|白)(?:一点|点)?的(?:话|语言|方式|说法)(?:再)?(?:解释|说|讲)(?:一下|一遍|下)"
    r"|(?:把)?(?:最后|第[一二三四五六七八九十\d]+)(?:那|这)?(?:一)?(?:段|句|条|个|部分)|(?:把)?(?:上面|上边|你上面|这段|这篇|这句)"
    r"|(?:字数|篇幅)(?:不够|太多|太少|太长|太短)"
    r"|(?:now |but |and |can you |could you |pls |please )*(?:make (?:it|this|that|them)|keep (?:it|this|that)) (?:a (?:bit|little|lot) |much |way |even |slightly )?(?:\w+er|more \w+|less \w+)\b"
    r"|(?:a (?:bit|little|lot) |much |way |even )?(?:more|less) \w+(?:\s+(?:please|pls|plz|this time|now))?\W*$"
    r"|(?:shorter|longer|simpler|funnier)(?:\s+(?:please|pls|plz|version|one))?\W*$"
    r"|same (?:thing|again|but|tone|for)|again but|now (?:do|in|for|add|translate|write|make|turn|convert|explain)\b|continue\W*$|keep going|go on\W*$"
    r"|(?:give me|another|write|do|list) (?:\d+|two|three|four|five|ten|a few|a couple) more\b|one more\b"
    r")")
"""An edit of the answer just given (再短一点 · 换个说法 · 再来五个 · 最后那段删掉 · 上面的代码改成… ·
now make it shorter · more formal please · less cheesy · same thing but for python 2.7 · give me 3
more): about that answer, nothing about the user. A bare comparative only — “shorter answers
please” and 回答简短点 ask for every answer."""
_ONE_PIECE = _rx(r"^(?:请|麻烦你?|你)?(?:帮我|给我|替我|帮忙)?(?:写|编|起草|列|做|画|想|出|拟|整理|设计|生成)(?:一|几|两|三|四|五|六|七|八|九|十|\d+)?(?:个|篇|段|份|封|首|张|句|条|套|版)"
                r"|^(?:(?:hi|hey|ok|okay)\W+)?(?:(?:can|could|would) you\s+)?(?:please\s+)?(?:help me\s+)?(?:write|draft|compose|create|make|generate|come up with"
                r"|put together|give me|prepare|design|build|code|outline)(?: me| us| up)? (?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|\d+|some|several|a few)\b")
"""A task that names one piece of work (写个请假条 · 写一首藏头诗 · Write me a poem for my wife ·
draft a resignation letter): what it asks of the piece (简短点, 别太肉麻, not too long) is that
piece's requirement, unless it says it lasts or is a habit (写代码的时候…)."""
_A_PROBLEM = _rx(r"[²³√∫∑∠△∧∨]|\d\s*[a-z]\b\s*[-+*/=]|\b[a-z]\s?\^\s?\d|\)\s?\^\s?\d|\b[a-z]\s?\(\s?[a-z]\s?\)\s?=|=\s*\[\["
                 r"|\d\s*[-+*/×÷]\s*\d[^=\n]{0,20}=|^=[A-Z]|\s=[A-Z]{2,}\(|\b[A-Z][a-z]?\d*(?:\([^)]{0,4}\))?\s*\+\s*[A-Z][a-z]?\d*[^\n]{0,30}(?:→|=)")
"""A formula, an equation or a proof to work on (2x² - 5x - 3 = 0 · ∠A=36° · f(x) = x^2 · Cu + HNO3 →
…): a problem for this turn, whatever its asker wants of the solution (用配方法, show all steps). Not
a bare sign: “tabstop=4”, “BMI=31”, 预算≤3000 and “7.2 → doctor says …” are told of the user."""
_PIECE_TO_WRITE = _rx(r"(?:作文|读后感|观后感|致谢|演讲稿|发言稿|短信|朋友圈|祝福|文案|推文|贺卡|请假条|歌词|标语|口号|检讨|情书|悼词|贺词|祝酒词)"
                      r"[^。！？!?]{0,40}?(?:\d+|[一二三四五六七八九十两几百千]+)\s*(?:字|分钟|句|条)"
                      r"|(?:\d+|[一二三四五六七八九十两几百千]+)\s*(?:字|分钟)[^。！？!?]{0,20}?(?:作文|读后感|观后感|致谢|演讲稿|发言稿|短信|朋友圈|祝福|文案|推文)"
                      r"|想(?:写|编|发)(?:一|几|两)?(?:段|篇|首|封|条|句)"
                      r"|(?:作文|致谢|演讲稿|发言稿|短信|朋友圈|祝福|文案|推文|贺卡|歌词|情书|贺词)[^。！？!?]{0,30}?想(?:写|发|编)"
                      r"|\bI (?:want|need|have|'d like) to write (?:a|an|my|some|the) (?:\w+[- ]){0,2}?(?:message|note|card|letter|speech|toast|poem|email|post|caption|eulogy)\b")
"""A piece of writing of a size (四年级作文…400字左右 · 演讲稿，两分钟 · 致谢 800字左右), or one the
user wants to write (七夕想写一段话给老公 · I want to write a heartfelt message …): its requirements
are that piece's."""
_I_MEAN = _rx(r"^\s*(?:我的意思是|我是说|我意思是|i mean|what i mean is|i meant)\s*[，,:：]?\s*")
"""A lead that only says the message rephrases the last one (“我的意思是，…”, “I mean, …”): its “我的” is no fact about me."""
_STANDING_WORDS = _rx(r"以后|今后|往后|每次|每回|总是|一律|永远|\b(?:from now on|going forward|always|every time|whenever)\b")


def _reminder_errand(text: str) -> bool:
    """A short message asking to be reminded of one thing (:data:`_REMINDER_ERRAND`, or
    :data:`_ERRAND_AT_END` about :data:`_ONE_DAY`)."""
    if not _terse(text):
        return False
    stripped = text.strip()
    asked = _REMINDER_ERRAND.match(stripped) is not None or (
        _ERRAND_AT_END.search(stripped) is not None and _ONE_DAY.search(stripped) is not None
        and _AS_USUAL.search(stripped) is None)  # fmt: skip
    return asked and not (_RECURRING.search(text) or _REMINDER_TIMES.search(text) or _STANDING_WORDS.search(text))


def _how_to_do_such_work(text: str) -> bool:
    """A task for this turn that also says how to do such tasks from now on: it says it lasts (以后,
    always …), recurs (每天) or is a habit (…的时候)."""
    return says_it_lasts(text) or _RECURRING.search(text) is not None or _HABIT.search(text) is not None


def _task_on_this_text(text: str) -> bool:
    """A task on a text of this conversation (:data:`_ABOUT_THIS_TEXT`), unless it says how to do
    such tasks from now on."""
    return _ABOUT_THIS_TEXT.search(text.strip()) is not None and not _how_to_do_such_work(text)


def _work_on_one_piece(text: str) -> bool:
    """An edit of the answer just given (:data:`_EDIT_THE_ANSWER`), a task naming one piece of
    work (:data:`_ONE_PIECE`), a problem to work on (:data:`_A_PROBLEM`) or a piece of writing of a
    size or that the user wants to write (:data:`_PIECE_TO_WRITE`), unless it says how to do such
    work from now on."""
    stripped = text.strip()
    return ((_EDIT_THE_ANSWER.match(stripped) is not None or _ONE_PIECE.match(stripped) is not None
             or _A_PROBLEM.search(stripped) is not None or _PIECE_TO_WRITE.search(stripped) is not None)
            and not _how_to_do_such_work(text))  # fmt: skip


def _fact_in_a_task(text: str) -> bool:
    """A message that opens with a task for this turn (“list 5 easy dinners I can make with a slow
    cooker” · 教我用Excel做个记账表 · 帮我核一下加班费): what it says about the user inside the
    task's own clause is the material of that task — unless it says it lasts, recurs, or revises
    something. A fact in a clause of its own is still one (“帮我推荐个零食，我对花生过敏”)."""
    clauses = [c.strip() for c in _CLAUSES.split(text) if c.strip(" \t。！？!?.")]
    return (bool(clauses) and _DO_THIS.match(clauses[0]) is not None
            and not any(_SELF.search(c) for c in clauses[1:]) and not says_it_lasts(text)
            and not _RECURRING.search(text) and not _REVERSAL.search(text))  # fmt: skip


def _only_context_of_a_request(text: str) -> bool:
    """The message is a question or a task for this turn (“I have 30 minutes before work. What
    workout should I do?” · “set something so I don't forget to renew my license” · “我下周要做个
    PPT 帮我列个提纲”): what it says
    about the user's situation (:data:`_SITUATION`) is the context of the request, not a standing
    statement — unless it revises something, says it lasts or is scoped in time, or (a question or
    an errand) is about how to answer: that holds for every turn. A plan and then the task it needs
    is the task's context whatever words of answering it names (“列个提纲”, “a reply”)."""
    if _REVERSAL.search(text) or says_it_lasts(text) or _scoped_in_time(text):
        return False
    sentences = [s.strip() for s in _SENTENCES.findall(text) if s.strip(" \t。！？!?.,，")]
    if not sentences:
        return False
    clauses = [c.strip() for c in _CLAUSES.split(sentences[-1]) if c.strip(" \t。！？!?")]
    last = clauses[-1] if len(sentences) == 1 else sentences[-1]  # the last sentence, or clause of one
    if len(clauses) + len(sentences) > 2 and (_TASK.match(last) or _DO_THIS.match(last)):
        return _SITUATION.search(text) is not None  # the plan, then the task: “我要做个PPT… 帮我列个提纲”
    if _STYLE.search(text):
        return False
    asks = sentences[-1].endswith(("?", "？")) and not (clauses and _TAG.fullmatch(clauses[-1]))
    return (asks and _SITUATION.search(text) is not None) or _ERRAND.match(sentences[0]) is not None


_ANY_WORD = re.compile(r"[\u4e00-\u9fff]{2,}|[A-Za-z]{3,}")


def _is_plain_statement(sentence: str) -> bool:
    """An assertion with content that is neither chatter nor a task for this turn."""
    body = sentence.strip(" \t。！？!?；;.,，~～…")
    if not body or _CHATTER.match(body) or _ACK.match(body) or _SMALL_TALK.search(body) or _asks(body):
        return False
    clauses = [c.strip() for c in _CLAUSES.split(body) if c.strip()]
    if any(_TASK.match(c) or _TASK_ANYWHERE.search(c) for c in clauses):
        return False
    return sum(max(1, len(w) // 3) if _HAN.match(w) else 1 for w in _ANY_WORD.findall(body)) >= 2


def _asserted_clauses(text: str) -> list[str]:
    """When no sentence asserts anything, the clauses before a tag question (“Nothing before 6,
    ok?”, “中午别排会，好吗？”) and the clauses beside hearsay (“医生说我血压控制得很好，口味重一点的
    菜也都能吃”)."""
    out: list[str] = []
    for sentence in _SENTENCES.findall(text):
        clauses = [c.strip() for c in _CLAUSES.split(sentence) if c.strip(" \t。！？!?")]
        if len(clauses) < 2:
            continue
        clauses = [_TAG_AFTER.sub("", c) or c for c in clauses]  # 你回我的话控制在三句以内好不好 asks for it
        if _TAG.fullmatch(clauses[-1]):
            clauses = clauses[:-1]
        elif any(_asks(c) for c in clauses):
            continue
        out += [c for c in clauses if asserted_sentences(c)]
    return out


_SENTENCES = re.compile(r"[^。！？!?\n]+[。！？!?]*")
_TAG = _rx(r"(?:ok|okay|right|yeah|please|alright|好吗|行吗|可以吗|好不好|行不行|知道吗|听到没|记住了吗|懂吗|好嘛|行嘛)\s*[?？]*")
_TAG_AFTER = _rx(r"(?<=[\u4e00-\u9fff])(?:好吗|行吗|可以吗|好不好|行不行|好嘛|行嘛)\s*[?？]*$")
"""A tag after a request in the same clause (…控制在三句以内好不好): the request is asked for, not asked about."""
_QUESTION_MARK = re.compile(rf"[?？]|吗|什么{LISTING_WHAT}|怎么|(?<!不)咋|哪{RHETORICAL_WHERE}|啥|多少|要不要|是不是|能不能|会不会|有没有|可不可以|好不好|行不行|(?<=[\u4e00-\u9fff])(?<![也都还并就再决绝从])(?:不|没)(?=\s*(?:$|[，,。.！!~～]))|(?:^|[.!;,:\n(]\s*|\b(?:so|and|but|or|ok|okay|hey|also|btw|then|wonder|wondering|of|about|on|for|to|at|in|as to|explain|tell me|show me|know|decide|figure out|check|see)\s+)(?:what|whats|how|hows|where|wheres|which|who|why)\b", re.IGNORECASE)
_NOT_ASKING = _rx(r"(?:(?<=别|甭|少)|(?<=不要|不用))([^，,。！!？?\s]{0,4})什么|没(?:啥|什么)(?![^，,。！!]{0,8}[吗？?])|(?:看|管|论)好不好|(?<=回答|回复|说话)(?:能不能|可不可以|能否)|^(?:你)?(?:能不能|可不可以|能否)(?=别|不要|少)"
                  r"|(?<=看看|看下|查查|查下|问问|问下|确认|注意)(?:一下)?(?:有没有|是不是|能不能|会不会)(?![^，,。！!]{0,12}[吗？?])")
"""什么 after a prohibition is “any such” (别写什么亚马逊物流), 没啥 is “nothing much” (其实多人间也没啥),
看好不好 is “whether it is good” (别光看好不好), 回答能不能分点 asks for a way of answering and 能不能别…
asks the assistant to stop something: none of them asks anything."""


def _asks(text: str) -> bool:
    """Whether the text asks something (:data:`_QUESTION_MARK`, less :data:`_NOT_ASKING`)."""
    return _QUESTION_MARK.search(_NOT_ASKING.sub(r"\1", text)) is not None


_INFO_QUESTION = _rx(r"^\W*(?:(?:so|and|but|ok|okay|hey|hi|also|btw)\W+)?(?:how|what|what's|whats|which|why|when|where|who|is (?:it|there|this|that)"
                    r"|are there|does|do I|should I|can someone|can anyone|difference between)\b.*[?？]\W*$")
_INFO_QUESTION_ZH = _rx(r"怎么(?!又|还|老|总)|怎样|如何|多久|多长时间|多少钱|哪(?:个|些|种|里|家|款)(?!都)|为什么|为啥|啥区别|什么区别|要不要|该不该|合法吗|正常吗|是不是[^，,。]*[?？]$")
"""A question that asks for information (how do I …?, what's the difference …?, 怎么撤销 …, 多久可以 …
— Chinese asks without a question mark too; not the reproach 怎么又把会放中午了)."""
_WH_OPENING = _rx(r"^\W*(?:how|what|which)\b")
_SENTENCE_ENDS = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n")
"""Sentence ends with the full stop too (:data:`_SENTENCES` keeps “$1.10 … the ball.” together)."""


def _asks_for_information(text: str) -> bool:
    """Some sentence asks for information (:data:`_INFO_QUESTION`, or opens with how / what /
    which): a terse assertion beside it (“how do I change a flat tire? road bike with quick
    release wheels” · “git 怎么撤销上一次 commit？还没push”) is the question's context, not a loose
    statement."""
    return any(_INFO_QUESTION.search(s) or _WH_OPENING.match(s) or _INFO_QUESTION_ZH.search(s)
               for s in (x.strip() for x in _SENTENCE_ENDS.split(text)) if s)  # fmt: skip


def _polite_requests(text: str) -> list[str]:
    """“Could you always give me metric units?” and 回答能不能分点列出来 are requests, not questions."""
    out = []
    for s in re.split(r"(?<=[?？])", text):
        stripped = s.strip()
        m = _POLITE.match(stripped)
        if m and (_LASTING.search(stripped) or _DIRECTIVE.search(stripped[m.end() :])):
            out.append(stripped[m.end() :].rstrip("?？ "))
        elif m := _STYLE_ASK.match(stripped):  # the rules below decide whether what it asks for is a wish
            out.append(m.group(1) + stripped[m.end() :].rstrip("?？ "))
    return out


_SAID_BEFORE = _rx(r"我(?:都|早就?|已经)?说(?:过|了)|\bI (?:already )?(?:told you|said|asked(?: for)?)\b")


def without_cues(text: str) -> str:
    """``text`` without its revision and correction cues (“No, that's wrong. I told you: …”): the
    words that say *that* something changes, which two statements of different subjects share."""
    for cue in (_CORRECTION, _SAID_BEFORE, _REVERSAL):
        text = cue.sub(" ", text)
    return text


_RECURS = _rx(r"现在|每(?:天|周|晚|早|次|个|逢)|一天\S{0,2}次|周[一二三四五六日末]|星期[一二三四五六日天]|礼拜[一二三四五六日天]|以后|不再|只(?!是)|"
              r"(?:改|换|挪|调|搬|切|升|转)(?:到|成|为)|"
              r"\b(?:now|only|every|each|daily|weekly|(?:mon|tues|wednes|thurs|fri|satur|sun)days|weekends|weeknights|(?:school )?nights|"
              r"mornings|evenings|afternoons|anymore|these days|(?:a|per) (?:day|week|night|month)|most days|usually|normally|"
              r"moved|switched|changed|(?:is|are) (?:out|in)(?=\W*$|[,.;—-])|gave up|given up|cancell?ed)\b|"
              r"\b(?:\d{1,2}(?::\d\d)?|noon|midday)\s*(?:am|pm)?\s*(?:to|till|until|til|-|–)\s*(?:\d{1,2}(?::\d\d)?|noon|midday|half (?:past )?\w+)\b"
              r"|[\d一二三四五六七八九十两]{1,3}点(?:半|\d{1,2}分?)?(?:到|至|-|~)[\d一二三四五六七八九十两]{1,3}点")
"""A schedule, a habit or a change that holds from now on (“No meetings on Wednesdays”, “We open
at 6:30 now”, “周日不更新”): never a passing state, however much it talks of days and hours."""


_ASKS_FOR_ONE = _rx(r"^(?:求|跪求)|(?:推荐|推|挑|找|订|买|来)(?:一个|个|一款|款|一下|几个|几款|一部|一本|几本|一份|一杯)"
                   r"(?:[\u4e00-\u9fffA-Za-z0-9]{0,8}(?<!就行)(?<!就好)(?<!就够)(?<!即可)(?<!以内)(?<!以下))\s*(?:吧|呗|呀|啊|哈)?\s*[!！~～]?\s*$")
"""A message that ends asking for one thing (宿舍用的台灯推荐一个, 推荐几本书) or opens with 求 asks for
it now."""


def asks_now(text: str) -> bool:
    """The message asks something or asks for one piece of work (:data:`_ONE_PIECE`): what it states
    beside that is said in passing, so it replaces an earlier statement only when it is plainly
    about the same thing (:func:`tianma.memory.statements.close_superseded`). Not every task
    opening: “Write it out in normal paragraphs” asks for a lasting way."""
    stripped = text.strip()
    return _asks(stripped) or _ONE_PIECE.match(stripped) is not None


def stated_by_model(text: str) -> StatementCue | None:
    """The cue of a message the rules read no statement in, when the statement model is all but
    sure it states something lasting (“步骤一条都别省，写全写细”, “we no longer need quick meals — my
    mom moved in, so give me slow weekend projects”): a wish, scoped in time by its own words. Never
    a question, talk about the conversation, a paste or a message that carried a secret; nor work
    for this turn, as the rules read it (longer than two lines or :data:`TERSE_WORDS`, opening
    with a task verb, an errand, the context of a request, a task on a text of this conversation,
    a role to play, an edit of the answer just given, a task naming one piece, or feedback on the
    reply)."""
    if (_never_a_statement(text) or _asks(text) or not _terse(text)
            or _TASK.match(text.strip()) or _ASKS_FOR_ONE.search(text) or _only_context_of_a_request(text)
            or _task_on_this_text(text) or _ABOUT_THE_ANSWER.search(text) or _DO_THIS.match(text.strip())
            or _work_for_this_turn(text) is not None or _work_on_one_piece(text)):  # fmt: skip
        return None
    return StatementCue("wish", _period(text, "wish"), _REVERSAL.search(text) is not None, _STYLE.search(text) is not None)


def says_it_recurs(text: str) -> bool:
    """The message states a schedule, a habit or a change (:data:`_RECURS`), and no period of its
    own (“Running late this morning, only the essentials please” is for this morning)."""
    return _RECURS.search(text) is not None and not _scoped_in_time(text)


def _scoped_in_time(text: str) -> bool:
    """It names a period of its own: today, these few days, this week."""
    return any(period.search(text) for period in (_DAY, _DAYS, _WEEK, _FORTNIGHT))


def says_it_lasts(text: str) -> bool:
    """The message says its wish lasts (以后, from now on, always, 记住 …)."""
    return _LASTING.search(text) is not None or _PERMANENT_DAY.search(text) is not None


def _period(text: str, kind: StatementKind, moody: bool = False) -> Period | None:
    """How long a statement holds; ``moody``: a clause of it is a passing state (“I've got a
    migraine, keep it brief”): a wish made from one lasts that day unless it says it lasts or the
    state recurs (“每天读paper读到吐，回答用中文就好”)."""
    if _PERMANENT_DAY.search(text):
        return None
    if _LASTING.search(text) and kind != "mood":
        return None
    if _FORTNIGHT.search(text):
        return "fortnight"
    if _WEEK.search(text):
        return "week"
    if _DAYS.search(text):
        return "days"
    if _DAY.search(text) or kind == "mood" or (moody and not _RECURRING.search(text)):  # 每天读paper读到吐: a habit
        return "day"
    return None


def period_end(at: datetime, period: Period, zone: tzinfo) -> datetime:
    """When a statement scoped to ``period`` stops holding, in the user's time zone: the end of
    that local day, of the third local day (“这几天”, “for the next few days”), of that local
    week (Sunday midnight), or fourteen local days on (“这两周”, “for the next fortnight”)."""
    local = at.astimezone(zone)
    days = {"day": 1, "days": 3, "week": 7 - local.weekday(), "fortnight": 14}[period]
    end = datetime.combine(local.date() + timedelta(days=days), time(0), tzinfo=zone)
    return end.astimezone(at.tzinfo or zone)


_CHANGE_OF_MIND = _rx(rf"{_CHANGE_WORDS_ZH}|(?<=[\u4e00-\u9fff]{{2}}){_NO_LONGER_DOING}|换回|\b(?:{_CHANGE_WORDS_EN}|switched to)\b"
                      r"|\bactually\b.{0,60}\bnow\b")
"""A cue that the user changes what held (改主意了, 周二不休了, 还是一百以内吧, no longer, actually … now) — not
the looser cues of :data:`_REVERSAL` (again, wait, instead, 算了) that chatter and edits of an answer use too,
nor 不吃了 / 不去了 alone (“吃饱了，不吃了” is this meal's)."""


def changes_mind(text: str) -> bool:
    """The terse message says the user changes what held, and asks nothing (:data:`_CHANGE_OF_MIND`):
    with it, a message the rules read nothing in is a wish, and the statement model's “states nothing”
    does not overrule a terse assertion (:func:`tianma.memory.statements.statement_fields`). Terse
    first: both uses concern terse messages only, and a pasted page is not searched twice more."""
    stripped = text.strip()
    return (_terse(text) and _CHANGE_OF_MIND.search(text) is not None and not _asks(stripped)
            and not stripped.endswith("呢"))  # fmt: skip


def revises(text: str) -> bool:
    """The message carries a cue that it revises something said before (不对, 不用…了, 改主意了,
    no longer, actually …)."""
    return _REVERSAL.search(text) is not None or _CORRECTION.search(text) is not None
