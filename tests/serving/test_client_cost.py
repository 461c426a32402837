"""bench/serving/client_cost.py re-does what ``vllm bench serve``'s client does with a streamed read: the
messages it finds, and a timestamp for each token chunk only (usage and [DONE] carry none)."""

import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "serving"
sys.path.insert(0, str(BENCH))


def test_a_stripped_read_is_one_whole_message_and_a_split_one_waits():
    import client_cost as cc

    body = b"data: " + json.dumps(cc.CHUNK).encode()
    handler = cc._Handler()
    assert handler.add(body) == [body.decode()]  # the caller strips the blank line: whole by its JSON
    assert handler.add(body[:40]) == []  # half a message: kept until the rest comes
    assert handler.add(body[40:] + b"\n\ndata: [DONE]") == [body.decode(), "data: [DONE]"]
    assert handler.buffer == ""


def test_only_token_chunks_are_timed():
    import client_cost as cc

    times: list[float] = []
    for obj in (cc.CHUNK, cc.USAGE, cc.CHUNK):
        cc._take("data: " + json.dumps(obj), 0.0, times)
    cc._take("data: [DONE]", 0.0, times)
    assert len(times) == 2 and times[0] <= times[1]


def test_the_fake_server_frames_each_message_as_one_http_chunk():
    import client_cost as cc

    frame = cc._event(b"[DONE]")
    assert frame == b"e\r\ndata: [DONE]\n\n\r\n"  # 14 bytes of message, in hex, then the message
