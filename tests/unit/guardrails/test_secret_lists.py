"""Secrets in structured text and lists (tianma.guardrails.secret_lists), through find_secrets:
each shape is removed from what is stored, and its near miss is left alone."""

from __future__ import annotations

import pytest

from tianma.guardrails.secrets import find_secrets, storable


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("手机扫出来 WIFI:T:WPA;S:Home-5G;P:pl9mk2qa;; 对吗", "pl9mk2qa"),
        ("fridge QR says WIFI:S:Garage;T:WPA;P:blue-heron-41;H:false;;", "blue-heron-41"),
        ("调接口 appid=wx12ab&app_secret=Zq81mLx02Kp7Ra9s 返回 40013", "Zq81mLx02Kp7Ra9s"),
        ("POST /login?user=ana&password=hunter2x99 gives 500", "hunter2x99"),
        ("curl -u admin:Pq7!zz81 http://10.0.0.2:8080/api is refused", "Pq7!zz81"),
        ("Outlook wants an app password, Google gave me vbtr-kqzm-plwx-hsnd", "vbtr-kqzm-plwx-hsnd"),
        (
            "recovery key 102938-475610-293847-561029-384756-102938-475610-293847 from IT",
            "102938-475610-293847-561029-384756-102938-475610-293847",
        ),
        (
            "my wallet words: 1. maple 2. rocket 3. lemon 4. tiger 5. cable 6. frost 7. piano 8. sugar 9. orbit "
            "10. candle 11. violet 12. saddle",
            "1. maple",
        ),
        ("常用密码：\n1. 微博 wb_zhao_881\n2. 淘宝 Tb!2024zhao\n帮我记着", "wb_zhao_881"),
        ("passwords for the office:\n- printer admin: 5521\n- NAS: Shelf!Ox12", "Shelf!Ox12"),
        ("Security questions for my bank — first car: Corolla, street I grew up on: Maple Row", "Corolla"),
        ("密保问题：小时候的外号 我填的小胖，最好的朋友 李明", "小胖"),
        ("for 'what was your childhood nickname' I put Bunny, so you know", "Bunny"),
        ("路由器管理密码出厂是 admin，后来我改成了 Rt88home", "Rt88home"),
        ("仓库的保险箱转三圈，就是 14-72-05", "14-72-05"),
        ("验证码第一次看成 QWRTPZ 后来发现是 QWRTZP", "QWRTZP"),
        ("SIM PIN, mine is 4471 I think? yes 4471", "4471"),
        ("the Authy setup key it showed is JBSW Y3DP EHPK 3PXP, ok?", "JBSW Y3DP EHPK 3PXP"),
        ("SMTP 授权码「pqzxnvbtrlkmwhsd」 填哪里", "pqzxnvbtrlkmwhsd"),
    ],
)
def test_the_value_is_not_stored(text: str, value: str) -> None:
    assert value not in storable(text)[0]


@pytest.mark.parametrize(
    "text",
    [
        "WiFi名字叫 Xiaomi_7F2B_5G，卧室信号差",
        "what are good password rules for a 12-person team?",
        "our users table keeps $2b$12$Qw8eR7tY6uI5oP4aS3dF2gH1jK0lZ9xC8vB7nM6qW5eR4tY3uI2oP, is bcrypt enough?",
        "the docs say set STRIPE_SECRET_KEY=sk_test_xxx in .env, where do I get mine",
        '<source id="1" name="router-manual.txt" resource-type="file">',
        "a long-term-care-plan for my mum",
        "1. eggs 2. milk 3. flour 4. sugar 5. butter 6. salt 7. yeast 8. honey 9. lemon 10. cream 11. apple 12. pears",
        "我把保险柜的说明书放在 3 号柜子里了",
    ],
)
def test_near_misses_are_kept(text: str) -> None:
    assert find_secrets(text) == []
