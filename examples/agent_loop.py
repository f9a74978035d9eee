#!/usr/bin/env python3
"""An agent loop on agentjail serve: the agent proposes an action, the
sandbox runs it, the observation goes back to the agent, until it is done.

`next_action` stands in for a language model: replace it with a call to
yours (give it the transcript, parse a tool call out of its answer). Every
command runs in one sandbox that lives for the whole task; the secret the
agent's code may need is a placeholder inside and redacted from what comes
back.

    agentjail serve &                       # as root
    AGENTJAIL_SOCKET=/run/agentjail/agentjail.sock python3 examples/agent_loop.py
"""

import os
import sys

try:  # the installed SDK (pip install ./sdk/python), else the source tree's
    from agentjail import Sandbox
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sdk",
                                    "python"))
    from agentjail import Sandbox  # noqa: E402

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = ("from calc import add\n"
        "assert add(2, 3) == 5, 'add(2, 3) = %r' % add(2, 3)\n"
        "print('tests pass')\n")


def next_action(transcript):
    """A scripted stand-in for the model: returns ("write", path, text),
    ("run", command) or ("done", summary)."""
    steps = [a for a, _ in transcript]
    if not steps:
        return ("write", "/tmp/proj/calc.py", BUGGY)
    if len(steps) == 1:
        return ("write", "/tmp/proj/test_calc.py", TEST)
    last_action, last_obs = transcript[-1]
    if last_action[0] == "run" and "tests pass" in last_obs:
        return ("done", "fixed add() and the tests pass")
    if last_action[0] == "run" and "AssertionError" in last_obs:
        return ("write", "/tmp/proj/calc.py", FIXED)
    return ("run", "cd /tmp/proj && python3 -B test_calc.py")


def main():
    transcript = []
    with Sandbox.create(memory="256M", pids=64, timeout=600,
                        secret={"SERVICE_TOKEN": "example-token-not-real"}) as sb:
        sb.files.mkdir("/tmp/proj", parents=True)
        for _ in range(10):
            action = next_action(transcript)
            if action[0] == "done":
                print("agent:", action[1])
                return 0
            if action[0] == "write":
                sb.files.write(action[1], action[2])
                obs = f"wrote {action[1]}"
            else:
                r = sb.exec(action[1], timeout=30,
                            on_stdout=lambda s: print("  |", s, end=""),
                            on_stderr=lambda s: print("  !", s, end=""))
                obs = f"exit {r.exit_code}\n{r.stdout}{r.stderr}"
            print(f"step {len(transcript) + 1}: {action[0]} -> {obs.splitlines()[0]}")
            transcript.append((action, obs))
    print("agent: gave up")
    return 1


if __name__ == "__main__":
    sys.exit(main())
