"""Which messages state something about the user, for how long, and whether they revise."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from tianma.policies.statements import _asks, classify_statement, period_end, revises, stated_by_model


@pytest.mark.parametrize(
    ("text", "kind", "period", "reversal"),
    [
        ("以后回答我的问题请先给结论，再讲细节。", "wish", None, False),
        ("不对，以后不用先给结论了，直接按步骤讲就行。", "wish", None, True),
        ("我对花生过敏", "fact", None, False),
        ("I am vegetarian", "fact", None, False),
        ("I started eating chicken and fish again", "fact", None, True),
        ("Please don't book me morning meetings", "wish", None, False),
        ("上次你推荐的那家川菜馆辣得我一晚上没睡好", "complaint", None, False),
        ("您推荐的那本书太无聊了，我看不下去", "complaint", None, False),  # the polite 您 too
        ("上回推那个剧尬死了 换点轻松的", "complaint", None, False),
        ("你推荐的那个燕麦早餐 十点就饿了 顶不住", "complaint", None, False),
        ("你上次推荐那部电影我看了十分钟就弃了 还是喜剧好", "complaint", None, False),
        ("你老是推火锅，我胃受不了", "complaint", None, False),
        ("今天别给我推贵的", "wish", "day", False),
        ("这回别推荐贵的", "wish", "day", False),
        ("小米手机，用不了苹果的，推荐之前看看有没有安卓版", "fact", None, False),  # 看看有没有: no question
        ("这次出差帮我订离会场近的酒店", "wish", "day", False),
        # 这次/这回 telling a checkup's finding, not scoping the wish to this time
        ("这次体检查出胆固醇高，医生让我少吃蛋黄，别给我推荐煎蛋了。", "wish", None, False),
        ("这回化验单上血脂正常了，红烧肉又能吃了。", "fact", None, True),
        ("这周别给我安排早会", "wish", "week", False),
        ("这几天别给我推剧", "wish", "days", False),
        ("今天好累，回答简单点", "mood", "day", False),
        ("Tonight, please keep it short", "wish", "day", False),
        ("从今天起别给我推送广告", "wish", None, False),
        ("Could you always use metric units from now on?", "wish", None, False),
        ("给我发邮件草稿的时候落款写小周", "wish", None, False),  # a habit: …的时候…
        ("When you plan my trips, please keep drives under three hours.", "wish", None, False),
        ("周末那两天别给我排跑步", "wish", None, False),  # a prohibition after its topic
        ("晚饭不用给我算热量了", "wish", None, True),
        ("咖啡都给我推燕麦奶的", "wish", None, False),  # a request after its topic
        ("Lay it out in numbered steps.", "wish", None, False),
        ("No onions in anything, ok?", "fact", None, False),  # before a tag question
        ("我同事说我太瘦了，晚饭给我推高蛋白的", "wish", None, False),  # beside hearsay
        ("Metric, if you'd be so kind.", "fact", None, False),
        ("我手机是安卓的", "fact", None, False),
        ("买衣服别超过三百块", "wish", None, False),  # a limit
        ("Nothing over $80, please", "wish", None, False),
        ("I've got a terrible migraine, keep it brief", "wish", "day", False),  # a wish made from a passing state
        ("算了，还是改回先说结论吧，最近忙疯了", "wish", None, True),  # a switch back to an earlier wish
        ("Switch me back to metric.", "wish", None, True),
        ("开始实习了要早起，早上七点就可以提醒我", "fact", None, False),  # 七点 is a time, not 点 (to order)
        ("No, that's wrong. I told you: Moved to day shift 🎉", "fact", None, True),  # a correction is never loose
        ("I'm so tired. What should I cook tonight?", "fact", "day", False),  # a passing state beside a question
        ("I'm vegetarian from now on. Any recipes?", "wish", None, False),  # it says it lasts
        ("I'm vegetarian. What should I cook?", "fact", None, False),  # who the user is, beside a question
        ("我对花生过敏。有什么零食推荐吗？", "fact", None, False),
        ("I want answers in bullet points. Can you do that?", "fact", None, False),  # how to answer: every turn
        ("能坐地铁就坐地铁", "wish", None, False),  # idioms of a standing wish
        ("买东西一定要看评价", "wish", None, False),
        ("长一点也没关系", "wish", None, False),
        ("报表用表格列", "wish", None, False),
        ("少点废话", "wish", None, False),
        ("直接给结论", "wish", None, False),
        ("Spanish recipes over anything else.", "wish", None, False),
        ("shorter replies would be welcome", "wish", None, False),  # an opinion of a way to answer
    ],
)
def test_statements_are_told_apart_with_their_period(text: str, kind: str, period: str | None, reversal: bool) -> None:
    cue = classify_statement(text)
    assert cue is not None
    assert (cue.kind, cue.period, cue.reversal) == (kind, period, reversal)


@pytest.mark.parametrize(
    "text",
    ["解释一下怎么配置路由器。", "推荐一款耳机", "谢谢", "嗯嗯", "How's the weather today?", "I mean, what should I cook tonight?",
     "如果我不吃辣的话你会推荐什么？", "他说他不吃香菜",
     "你好，我有个问题想请教一下", "Quick question about my router", "Very good.", "有啥好用的浏览器插件",
     "明天给我订个酒店", "下午帮我点杯咖啡", "手里有两万块 要不要买基金",
     "记一下门禁码 [密码已删除/code removed]",
     # what the user says as the context of this turn's question or errand is no standing statement
     "I have 30 minutes before work. What workout should I do?", "I'm visiting my brother in Glasgow on Friday. How should I get there?",
     "I've got £5,000 in savings; what should I do with it?", "set something so I don't forget to renew my license",
     "明天一定要提醒我带伞", "用英文写一封感谢信",  # a standing idiom on an occasion; a task in a language
     "Set a reminder for my dentist appointment on Tuesday at 3.", "我下周去成都出差，住哪里方便？"],  # a secret's message asks to keep it: no statement
)
def test_questions_requests_chatter_and_hearsay_state_nothing(text: str) -> None:
    assert classify_statement(text) is None


def test_style_marks_wishes_about_how_to_answer() -> None:
    style = classify_statement("以后回答简短一点")
    other = classify_statement("我不吃香菜")
    assert style is not None and style.style and other is not None and not other.style


def test_a_period_ends_at_local_midnight_of_the_users_zone() -> None:
    shanghai = ZoneInfo("Asia/Shanghai")
    said = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)  # 04:00 on Monday 2 March in Shanghai
    assert period_end(said, "day", shanghai) == datetime(2026, 3, 3, 0, 0, tzinfo=shanghai)
    assert period_end(said, "days", shanghai) == datetime(2026, 3, 5, 0, 0, tzinfo=shanghai)
    assert period_end(said, "week", shanghai) == datetime(2026, 3, 9, 0, 0, tzinfo=shanghai)  # next Monday
    assert period_end(said, "day", UTC) == datetime(2026, 3, 2, 0, 0, tzinfo=UTC)


def test_forgetting_differs_by_kind() -> None:
    from datetime import timedelta

    from tianma.policies.decay import decay, rule_for

    now = datetime(2026, 6, 1, tzinfo=UTC)
    idle_since = now - timedelta(days=100)
    allergy = rule_for("fact", "health.allergy.peanut", "用户对花生过敏")
    name = rule_for("fact", "note.x", "User's name is Li")
    pref = rule_for("preference", "preference.answer.length", "回答简短一点")
    lesson = rule_for("experience", None, "术语让用户困惑")
    city = rule_for("fact", "profile.city", "用户住在杭州")
    assert decay(0.9, idle_since, None, now, allergy).confidence == 0.9
    assert decay(0.9, idle_since, None, now, name).periods == 0
    assert decay(0.9, idle_since, None, now, pref).periods == 1  # 90 days
    assert decay(0.9, idle_since, None, now, city).periods == 3  # 30 days
    assert decay(0.9, idle_since, None, now, lesson).confidence == round(0.9 * 0.7**3, 6)


def _blocks(name: str) -> list[str]:
    from pathlib import Path

    raw = (Path(__file__).parents[2] / "fixtures" / "statements" / name).read_text(encoding="utf-8")
    lines = (line for line in raw.splitlines() if not line.startswith("#"))
    return [b.strip() for b in "\n".join(lines).split("\n---\n") if b.strip()]


@pytest.mark.parametrize("text", _blocks("tasks.txt"))
def test_work_for_this_turn_and_pasted_material_state_nothing(text: str) -> None:
    # a chat client's traffic is mostly tasks: a task, code or a pasted text taken as a statement
    # would stand in every prompt as the user's wish and could close a real one
    assert classify_statement(text) is None


@pytest.mark.parametrize(
    ("text", "loose"),
    [
        ("Python, please.", True),  # a terse assertion: the model may still overrule it
        ("Bullet points. No essays.", True),
        ("以后回答我的问题请先给结论，再讲细节。", False),  # a wish by rule: never overruled
        ("我对花生过敏", False),
        ("No, that's wrong. Mornings are my time.", False),  # the user says outright that it revises
    ],
)
def test_a_statement_taken_only_as_a_terse_assertion_is_marked_loose(text: str, loose: bool) -> None:
    cue = classify_statement(text)
    assert cue is not None and cue.loose is loose


def test_a_long_message_with_no_cue_is_no_statement_but_a_long_wish_is() -> None:
    essay = "The committee met on Tuesday and discussed the budget for the coming year " * 3
    assert classify_statement(essay.strip() + ".") is None
    assert classify_statement("From now on, remind me that " + essay.strip() + ".") is not None


def test_a_message_the_model_is_sure_of_is_a_wish_even_when_no_rule_reads_it() -> None:
    from tianma.policies.statements import stated_by_model

    cue = stated_by_model("步骤一条都别省，写全写细")
    assert cue is not None and cue.kind == "wish" and cue.period is None
    timed = stated_by_model("this week keep everything vegetarian")
    assert timed is not None and timed.period == "week"
    assert stated_by_model("What should I cook tonight?") is None  # a question never is
    assert stated_by_model("这个怎么配置？") is None
    # work for this turn, as the rules read it, is not made a statement by the model either
    assert stated_by_model("rewrite for a single path and remove tls") is None
    assert stated_by_model("Remind me to call the bank tomorrow at nine") is None
    assert stated_by_model("Mitochondria are the powerhouse of the cell.\n\nSelect one:\nTrue\nFalse") is None


def test_these_days_is_now_not_a_few_days() -> None:
    cue = classify_statement("I only need the quick gist these days, skip the references")
    assert cue is not None and cue.period is None
    few = classify_statement("For the next few days, skip the references")
    assert few is not None and few.period == "days"


@pytest.mark.parametrize(
    "text",
    ["Send me the forecast every morning", "每周五下午提醒我交周报", "Water reminder every day at noon",
     "天天给我推一首老歌", "Weekly summary of my spending, please"],
)
def test_a_wish_that_names_its_recurrence_stands(text: str) -> None:
    cue = classify_statement(text)
    assert cue is not None and cue.kind == "wish" and cue.period is None


def test_a_task_that_mentions_a_recurrence_is_not_a_wish() -> None:
    task = ("Write a short story about a lighthouse keeper who climbs the stairs every morning, talks to the gulls, "
            "keeps a log of ships and one night sees a light where no ship should be; about five hundred words.")  # fmt: skip
    assert classify_statement(task) is None


@pytest.mark.parametrize("text", ["去企业做法务了", "周会挪到周四下午三点了", "异常信息统一英文", "今年考上在职研究生了"])
def test_a_chinese_clause_with_no_separator_can_be_a_terse_statement(text: str) -> None:
    # one run of characters is a whole clause, not one word
    cue = classify_statement(text)
    assert cue is not None and cue.kind == "fact" and cue.loose and cue.period is None


@pytest.mark.parametrize("text", ["狗能吃葡萄不", "明早提醒我带伞", "下午四点提醒我拿快递", "这个用大白话再讲一遍"])
def test_a_question_or_an_errand_with_no_separator_is_not(text: str) -> None:
    assert classify_statement(text) is None


@pytest.mark.parametrize("text", ["电脑开不了机 咋整", "这报销单子咋填", "whats a cheap way to ship a bike", "hows the weather up north",
                                  "高铁能带充电宝不", "医保断了几个月有影响没", "要是我辞职开奶茶店 你觉得能成不"])
def test_questions_as_typed_in_chat_state_nothing(text: str) -> None:
    assert classify_statement(text) is None


@pytest.mark.parametrize(
    ("text", "period"),
    [("next couple of days im in denver, keep recs nearby", "days"), ("on call until friday, keep it short", "week"),
     ("到周日之前都别给我排晚上的事", "week"), ("这三天下大暴雨 跑单路线帮我避开涵洞", "days"),
     ("接下来两天别给我推送", "days"), ("these three days I'm in Paris, suggest places there", "days")],
)
def test_a_wish_until_a_day_or_for_the_next_days_expires(text: str, period: str) -> None:
    cue = classify_statement(text)
    assert cue is not None and cue.period == period


@pytest.mark.parametrize(
    ("text", "reversal"),
    [("Weirdly I'm all about serifs now.", True), ("My partner moved in, so portions for two now.", True),
     ("I'm swamped right now, keep it short", False), ("Short answers for now, please", False)],
)
def test_a_state_said_to_hold_now_is_a_change(text: str, reversal: bool) -> None:
    cue = classify_statement(text)
    assert cue is not None and cue.reversal is reversal


@pytest.mark.parametrize("text", ["New rotation came out. I work Thursday through Saturday now.", "排班改了 我周四到周六上班 约事别排那几天"])
def test_a_range_of_weekdays_is_a_schedule_not_a_deadline(text: str) -> None:
    cue = classify_statement(text)
    assert cue is not None and cue.period is None


@pytest.mark.parametrize(
    ("text", "asks"),
    [("高铁能带充电宝不", True), ("这个好不好", True), ("你要什么", True), ("比如FBA就写FBA 别写什么亚马逊物流", False),
     ("东西别光看好不好 得看价钱", False), ("回答能不能分点列出来", False), ("能不能别老在回复里加表情", False),
     ("能不能帮我查一下", True), ("辣的我也不", False), ("how do I renew a passport", True),
     ("so which one is cheaper", True), ("do a detailed analysis of which number is the highest below 100", True),
     # a relative clause or "the why" asks nothing
     ("Got a codriver now who reads your stuff to me, so write normal", False),
     ("just the code first, i'll ask for the why if i need it", False)],
)
def test_what_asks_and_what_only_looks_like_a_question(text: str, asks: bool) -> None:
    assert _asks(text) is asks


@pytest.mark.parametrize(("text", "stated"), [("你说详细点没事", True), ("你说话别那么客气", True), ("你说得对", False),
                                              ("你说他是不是傻", False), ("你说过要早点提醒我", False)])
def test_you_say_is_hearsay_unless_it_asks_how_to_say_it(text: str, stated: bool) -> None:
    assert (classify_statement(text) is not None) is stated


def test_reading_that_gives_a_headache_is_a_dislike_not_a_passing_mood() -> None:
    cue = classify_statement("回答短点 一大坨字看着头疼")
    assert cue is not None and cue.period is None  # was read as a headache that lasts the day
    cue = classify_statement("我头疼 回答短点")
    assert cue is not None and cue.period == "day"


@pytest.mark.parametrize(
    "text",
    ["no reminders before 2pm pls 😴", "Late morning for reminders, please, as before.", "hit me up in the morning w reminders",
     "提醒我的事早上六点半前说", "要提醒的事提前一天晚上说"],
)
def test_when_reminders_should_come_is_a_standing_wish(text: str) -> None:
    cue = classify_statement(text)
    assert cue is not None and cue.kind == "wish" and not cue.loose and cue.period is None


def test_a_wish_about_reminders_scoped_in_time_holds_for_its_period() -> None:
    cue = classify_statement("taking the weekend off, no work reminders till monday, back to 9am reminders after")
    assert cue is not None and cue.period == "week"


@pytest.mark.parametrize("text", ["remind me at 5 to call the vet", "明早9点提醒我交PPT", "could you remind me about the dentist on thursday at 2"])
def test_a_reminder_of_one_thing_is_not_about_when_reminders_come(text: str) -> None:
    cue = classify_statement(text)
    assert cue is None or cue.kind != "wish"


@pytest.mark.parametrize("text", ["回答能不能分点列出来啊 一大坨字看着头疼", "说话能不能别绕弯子", "你的回答能不能短一点"])
def test_asking_whether_answers_can_take_a_form_is_a_wish(text: str) -> None:
    cue = classify_statement(text)
    assert cue is not None and cue.kind == "wish" and cue.style and cue.period is None


def test_asking_whether_an_answer_can_be_fast_states_no_way_of_answering() -> None:
    assert classify_statement("回答能不能快点") is None


def test_where_in_cannot_bear_or_afford_asks_nothing() -> None:
    cue = classify_statement("你上回让我下夜班去吃麻辣烫，结果凌晨胃疼得直冒冷汗，我这胃哪受得了那个")
    assert cue is not None and cue.kind == "complaint"
    assert cue.period is None  # the pain a past answer caused is no passing mood
    assert _asks("哪里买得到这种书") and not _asks("我们小店哪用得起")


@pytest.mark.parametrize("text", ["记得提醒我给妈妈打电话", "别忘了提醒我交这个月的房租", "remember to remind me to call my mom"])
def test_remember_to_remind_me_of_one_thing_is_an_errand(text: str) -> None:
    assert classify_statement(text) is None


@pytest.mark.parametrize("text", ["记得每个月提醒我交房租", "记得以后提醒我早点睡", "remind me about his vaccine appointments a week ahead"])
def test_reminders_that_recur_or_come_ahead_of_a_kind_of_thing_are_standing(text: str) -> None:
    cue = classify_statement(text)
    assert cue is not None and cue.period is None


@pytest.mark.parametrize(
    "text",
    ["你回我的话控制在三句以内好不好，太长了我真看不进去",  # a tag after a request asks for it
     "能不能别老在回复里加表情和'宝子'这种词，正经说话就行",  # 能不能别… asks the assistant to stop
     "你以后回答我的时候别夹英文单词，什么APP、OK、Wi-Fi的，都换成中文说法。今天降温了没有？"],  # 什么 + a list: “things like”
)
def test_requests_that_look_like_questions_are_read(text: str) -> None:
    assert classify_statement(text) is not None


def test_a_mood_that_recurs_does_not_scope_the_wish_beside_it() -> None:
    cue = classify_statement("回答用中文就好，别全英文了，每天读paper读到吐，回来还看英文真的会崩溃")
    assert cue is not None and cue.kind == "wish" and cue.period is None
    cue = classify_statement("今天读paper读到吐，回答用中文就好")
    assert cue is not None and cue.period == "day"


def test_what_a_thing_needs_to_be_is_no_task() -> None:
    assert classify_statement("recipes need to be under 15 min total, we have zero time") is not None
    assert _asks("别发表情什么的") is False and _asks("你喜欢什么颜色的") is True
    assert _asks("这是干什么的") is True  # what is it for


@pytest.mark.parametrize("text", ["同事跟我换班帮了大忙，发条消息谢谢她", "我的意思是，点两杯奶茶，我和室友一人一杯",
                                  "老板升职了，发个朋友圈祝贺一下"])
def test_a_task_with_what_happened_around_it_is_no_statement(text: str) -> None:
    assert classify_statement(text) is None


@pytest.mark.parametrize("text", ["以后跟我说话直接点", "提醒别弄闹钟 发条消息就行", "我的意思是，以后回答短一点"])
def test_how_to_talk_to_me_and_a_way_that_is_enough_are_still_statements(text: str) -> None:
    assert classify_statement(text) is not None


@pytest.mark.parametrize("text", ["ugh, completely freaking out about my driving test", "gutted, the concert got cancelled",
                                  "刚被老板骂了一顿 好憋屈", "早饭没吃 饿得发慌", "bit tipsy after the work party lol"])  # fmt: skip
def test_a_passing_state_in_everyday_words_holds_for_the_day(text: str) -> None:
    cue = classify_statement(text)
    assert cue is not None and (cue.kind, cue.period) == ("mood", "day")


@pytest.mark.parametrize("text", ["I get overwhelmed by walls of text, use headings", "I'm bored of pasta, suggest other dinners"])
def test_a_state_that_comes_back_or_a_taste_is_not_passing(text: str) -> None:
    cue = classify_statement(text)
    assert cue is not None and cue.period is None


@pytest.mark.parametrize(
    ("text", "period"),
    [("for the next fortnight I'm in Berlin, suggest places near Mitte", "fortnight"),
     ("这两周在杭州出差 推荐吃的就推杭州的", "fortnight"), ("bit of a cold, soups only for a day or two", "days"),
     ("we're away for the long weekend so no cooking ideas needed", "week"), ("knackered, short answers tonite", "day"),
     ("nothing longer than 15 min to cook for us rn", None), ("I need a meal prep plan for the week", None),
     ("I'm an RN, medical terms are fine", None)],
)  # fmt: skip
def test_more_ways_of_naming_a_period(text: str, period: str | None) -> None:
    cue = classify_statement(text)
    assert cue is not None and cue.period == period


def test_a_fortnight_ends_fourteen_local_days_on() -> None:
    at = datetime(2026, 3, 4, 15, tzinfo=UTC)  # a Wednesday
    assert period_end(at, "fortnight", UTC) == datetime(2026, 3, 18, tzinfo=UTC)


@pytest.mark.parametrize("text", ["把上面这段改得正式一点 要发给领导", "帮我把这几句翻成日语", "turn this into a tweet",
                                  "proofread this for me: 'their going to the park tomorrow'", "fix the spelling: 'I recieved it'"])  # fmt: skip
def test_a_task_on_a_text_of_this_conversation_states_nothing(text: str) -> None:
    assert classify_statement(text) is None


def test_how_to_do_such_tasks_from_now_on_is_still_a_wish() -> None:
    cue = classify_statement("以后把这种总结都写成表格")
    assert cue is not None and cue.kind == "wish" and cue.period is None


def test_a_feeling_about_what_the_assistant_recommended_is_no_passing_mood() -> None:
    cue = classify_statement("still crying about that $300 jacket you suggested, my rent is due")
    assert cue is None or cue.kind != "mood"


@pytest.mark.parametrize("text", ["you got that wrong, try again", "That is not what I asked for", "这个答案不对吧 再想想",
                                  "不对 我问的是明天的天气", "把“春晓”这首诗改成白话", "hi, hope you're well"])  # fmt: skip
def test_feedback_on_the_reply_states_nothing_about_the_user(text: str) -> None:
    assert classify_statement(text) is None


@pytest.mark.parametrize("text", ["explain how a mortgage works like I am a student",
                                  "draft a note to my landlord saying I am moving out in May",
                                  "list some podcasts I can listen to while running", "帮我核对一下发票金额对不对 我报销了三张"])  # fmt: skip
def test_what_a_task_says_about_the_user_is_its_material(text: str) -> None:
    assert classify_statement(text) is None


@pytest.mark.parametrize("text", ["以后帮我写邮件都用正式的语气，我是律师", "Give me distances in miles, I moved to Texas",
                                  "Kindly write in full sentences, I hate bullet points"])  # fmt: skip
def test_a_way_of_answering_beside_a_reason_is_still_a_statement(text: str) -> None:
    assert classify_statement(text) is not None


def test_a_question_tag_revises_nothing() -> None:
    assert not revises("帮我看看这个方案对不对") and revises("不对不对，预算两百以内")


@pytest.mark.parametrize("text", ["我下个月要做个年终汇报 帮我列个提纲", "never mind that, what about the train",
                                  "good evening, how are you"])  # fmt: skip
def test_a_plan_before_its_task_and_small_talk_state_nothing(text: str) -> None:
    assert classify_statement(text) is None


@pytest.mark.parametrize("text", ["我对花生过敏，帮我推荐个零食", "never book me red-eye flights", "帮我推荐个零食，我对花生过敏",
                                  "Help me plan meals for the week, I am diabetic"])  # fmt: skip
def test_a_fact_before_a_request_and_a_real_never_still_count(text: str) -> None:
    assert classify_statement(text) is not None


LONG_TASK = ("I'm organising a reunion for my old football team next spring. Write an invitation email for about thirty "
             "people: keep it warm, mention that partners are welcome, that we'll meet at the Red Lion at 7pm, and ask "
             "everyone to reply by the end of the month. No bullet points, and don't make it sound like a work memo.")  # fmt: skip
LONG_TASK_ZH = ("我们公司下个月要搞一次读书分享会，我负责写活动通知。要求：时间是周四下午三点，地点在三楼大会议室，"
                "每人带一本最近读过的书，分享五分钟以内，结束后有茶歇。语气活泼一点，不要太官方，字数三百字以内，"
                "最后提醒大家在群里接龙报名，写完再帮我起一个吸引人的标题。")  # fmt: skip


@pytest.mark.parametrize("text", [LONG_TASK, LONG_TASK_ZH])
def test_a_long_prompt_for_a_piece_of_work_states_nothing(text: str) -> None:
    assert classify_statement(text) is None


def test_of_a_long_prompt_only_what_says_it_lasts_is_read() -> None:
    cue = classify_statement(LONG_TASK + " And from now on, always sign emails you write for me as Rob.")
    assert cue is not None and cue.kind == "wish" and cue.period is None


def test_a_passing_state_told_at_length_still_holds_for_its_period() -> None:
    text = ("Honestly this morning has been a disaster: the boiler broke, the dog was sick on the rug, the school run "
            "took forever because of roadworks and I spilled coffee on my only clean shirt before a client call. "
            "I'm running on empty today, so keep things short and simple.")  # fmt: skip
    cue = classify_statement(text)
    assert cue is not None and cue.period == "day"


@pytest.mark.parametrize("text", ["Act as a travel agent and plan me a weekend in Porto, be enthusiastic",
                                  "You are a grumpy French chef. Stay in character and never break character",
                                  "你扮演我的英语口语老师，我说错了就纠正我", "假设你是面试官，问我三个问题"])  # fmt: skip
def test_a_role_to_play_is_no_wish_of_the_user(text: str) -> None:
    assert classify_statement(text) is None


def test_a_role_that_says_it_lasts_is_still_a_wish() -> None:
    cue = classify_statement("你现在是我的健身教练，以后每天早上给我发当天的训练计划")
    assert cue is not None and cue.kind == "wish" and cue.period is None


@pytest.mark.parametrize("text", ["make it punchier", "a bit more casual please", "再精简一点", "换个开头", "第二段删掉",
                                  "give me 3 more", "now translate it to German", "same thing but in Rust",
                                  "写一封感谢信给班主任 别太长", "Write me a limerick about cats, not too silly"])  # fmt: skip
def test_an_edit_of_the_answer_or_the_requirements_of_one_piece_state_nothing(text: str) -> None:
    assert classify_statement(text) is None


@pytest.mark.parametrize("text", ["求 x² + 4x + 4 = 0 的解 用因式分解 别用求根公式",
                                  "integrate x^2 from 0 to 3, no shortcuts", "毕业典礼的发言稿 三分钟左右 轻松一点",
                                  "端午节给客户发的祝福短信 30字以内 别太官方", "想写一段话给我爸 他下个月退休 朴实一点",
                                  "I want to write a thank-you note to my neighbour, warm but short",
                                  "你第三步算错了吧 应该是负数", "the answer should be 7, you forgot to carry the one",
                                  "wait why did you use recursion there instead of a loop",
                                  "用更通俗的话解释一下 我奶奶也要能听懂", "regex for a US zip code with the optional +4",
                                  "prove that there are infinitely many primes",
                                  "a cron expression for the first monday of each month",
                                  "can you go over step 2 again, the part with the logs",
                                  "I did not understand why you sorted it first"])  # fmt: skip
def test_a_problem_an_artifact_a_sized_piece_or_a_correction_of_the_answer_states_nothing(text: str) -> None:
    assert classify_statement(text) is None


@pytest.mark.parametrize("text", ["发言稿以后都帮我控制在三分钟以内", "Sundays = rest day, no workout plans",
                                  "回答控制在200字以内", "Python script, please, I hate reading shell",
                                  "I don't get why people like jazz, never recommend it",
                                  "I use vim with tabstop=4, so indent code with 4 spaces", "My BMI=31 so keep meal ideas low-carb",
                                  "预算≤3000，别推荐贵的", "my blood sugar is 7.2 → doctor says cut the sweets, no desserts in recipes",
                                  "I want to write a novel someday, so send me writing tips when you can",
                                  "我想写点东西 但总是拖延，你以后多督促我"])  # fmt: skip
def test_a_size_a_sign_or_a_wish_to_write_in_a_lasting_statement_is_still_one(text: str) -> None:
    cue = classify_statement(text)
    assert cue is not None and cue.period is None


@pytest.mark.parametrize("text", ["shorter answers please", "以后回答再短一点", "给我写代码的时候注释写中文",
                                  "make it shorter from now on, I read on my phone"])  # fmt: skip
def test_a_way_for_every_answer_is_still_a_wish(text: str) -> None:
    cue = classify_statement(text)
    assert cue is not None and cue.period is None


@pytest.mark.parametrize("text", ["how do I reset a router. it's a TP-Link one", "咖啡喝多了怎么缓解？刚喝了第三杯",
                                  "what's the quickest way to defrost mince? forgot to take it out"])  # fmt: skip
def test_the_context_of_a_question_is_no_loose_statement(text: str) -> None:
    assert classify_statement(text) is None


def test_a_reproach_with_a_question_word_still_counts() -> None:
    assert classify_statement("怎么又把会放晚上了？我说过晚上要陪孩子") is not None


@pytest.mark.parametrize("text", ["给我来点轻松搞笑的综艺，下饭看的那种", "推点适合跑步听的歌", "多推荐点练腿的动作",
                                  "这类纪录片多给我找找", "电脑换成Mac了，软件推荐苹果的就行",
                                  "Sci-fi novels, please. Big ideas, not space battles.",
                                  "more cooking podcasts pls"])  # fmt: skip
def test_a_request_for_things_of_a_kind_is_a_lasting_wish(text: str) -> None:
    cue = classify_statement(text)
    assert cue is not None and (cue.kind, cue.period) == ("wish", None)


@pytest.mark.parametrize("text", ["来点土味情话", "推荐一部电影", "给我推荐个便宜点的耳机", "来点例子",
                                  "想买双跑鞋，帮我看看", "想去桂林旅游，帮我规划一下交通"])  # fmt: skip
def test_one_thing_or_this_turns_content_is_no_taste(text: str) -> None:
    cue = classify_statement(text)
    assert cue is None or cue.kind != "wish" or cue.period is not None


def test_an_order_form_is_no_task_to_book() -> None:
    """订 books something (订个酒店), 订货单 is an order form: a terse wish after it is one the model may read."""
    assert stated_by_model("订货单都用公斤，你那边也按公斤来。") is not None
    assert stated_by_model("订个酒店，离地铁近点") is None


@pytest.mark.parametrize("text", ["你上回推荐的那本小说我看了两章就弃了", "推荐的电影别太长 九十分钟以内",
                                  "你推荐的那首歌我女儿天天听，我自己还是爱听老歌"])  # fmt: skip
def test_what_was_recommended_is_no_request_and_a_novel_no_hearsay(text: str) -> None:
    """推荐的 is “the recommended”, not “recommend”; 小说我 is “the novel, I”, not “said I”."""
    cue = classify_statement(text)
    assert cue is not None and cue.period is None


@pytest.mark.parametrize("text", ["我就喜欢那种慢节奏的文艺片，记着点哈", "字少点 我都是在地铁上看",
                                  "pleeease no spoilers, i'm only on season two", "pls no emojis in ur answers"])  # fmt: skip
def test_a_liking_a_bit_shorter_and_please_no_are_statements(text: str) -> None:
    """记着点 / 少点 are “keep in mind” / “a bit less”, not an order (点个外卖); “please no …” forbids."""
    cue = classify_statement(text)
    assert cue is not None and cue.period is None


@pytest.mark.parametrize("text", ["晚点再聊 拜拜", "please no, I meant the other one"])
def test_later_and_a_bare_no_state_nothing(text: str) -> None:
    assert classify_statement(text) is None


@pytest.mark.parametrize("text", ["后天去体检 提醒我", "周六要交物业费 记一下", "vet appointment on the 9th, don't let me forget",
                                  "dentist tomorrow at 3 remind me"])  # fmt: skip
def test_a_reminder_of_one_day_asked_at_the_end_is_an_errand(text: str) -> None:
    assert classify_statement(text) is None


@pytest.mark.parametrize("text", ["会议前半小时提醒我", "晚上十点以后别提醒我", "房租还是周五那天提醒我"])
def test_when_reminders_come_is_still_a_wish(text: str) -> None:
    cue = classify_statement(text)
    assert cue is not None and cue.period is None
