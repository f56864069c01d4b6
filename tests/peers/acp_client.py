# An ACP client on the official Python SDK (agent-client-protocol) that drives an agent over
# stdio through a scripted conversation and prints, one JSON object per line and as it happens,
# every response, session update and permission request it sees (in the protocol's wire form).
#
#   python acp_client.py PLAN.json
#
# PLAN: {"command": [...agent argv...], "cwd": DIR, "client": NAME,
#        "permissions": ["allow_once" | "allow_always" | "reject_once" | "cancelled", ...],
#        "fs": {"buffers": {PATH: TEXT}}   (optional: offer fs/read_text_file and
#              fs/write_text_file over these unsaved buffers; other files are read from disk,
#              and writes stay in the buffers),
#        "steps": [{"op": "new", "cwd": DIR, "mcp": [SERVER...]},
#                  {"op": "load", "session": ID, "cwd": DIR},
#                  {"op": "prompt", "text": T, "cancel_after": UPDATE_KIND?},
#                  {"op": "wait_file", "path": P}]}
# A prompt's session is the one the last new/load step opened. `cancel_after` sends
# session/cancel once an update of that kind (agent_message_chunk, tool_call, …) arrives.
# A step that fails prints {"event": "error", "op", "code", "message"} and the plan goes on.
import asyncio
import json
import os
import sys

import acp
from acp import text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    EnvVariable,
    FileSystemCapabilities,
    HttpMcpServer,
    Implementation,
    McpServerStdio,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)


def emit(obj):
    print(json.dumps(obj), flush=True)


def wire(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class Recorder:
    def __init__(self, answers, fs):
        self.fs = fs
        self.answers = list(answers)
        self.seen = {}
        self.waiters = []

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        answer = self.answers.pop(0) if self.answers else "reject_once"
        emit({"event": "permission", "session": session_id, "toolCall": wire(tool_call),
              "options": [wire(o) for o in options], "answer": answer})
        if answer == "cancelled":
            outcome = DeniedOutcome(outcome="cancelled")
        else:
            outcome = AllowedOutcome(outcome="selected", option_id=answer)
        return RequestPermissionResponse(outcome=outcome)

    async def session_update(self, session_id, update, **kwargs):
        u = wire(update)
        emit({"event": "update", "session": session_id, "update": u})
        kind = u.get("sessionUpdate")
        self.seen[kind] = self.seen.get(kind, 0) + 1
        for kinds, fut in self.waiters:
            if kind in kinds and not fut.done():
                fut.set_result(kind)

    def waiting_for(self, kind):
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append(({kind}, fut))
        return fut

    async def write_text_file(self, session_id, path, content, **kwargs):
        if self.fs is None:
            raise acp.RequestError.method_not_found("fs/write_text_file")
        self.fs["buffers"][path] = content
        emit({"event": "fs_write", "session": session_id, "path": path, "content": content})
        return WriteTextFileResponse()

    async def read_text_file(self, session_id, path, line=None, limit=None, **kwargs):
        if self.fs is None:
            raise acp.RequestError.method_not_found("fs/read_text_file")
        emit({"event": "fs_read", "session": session_id, "path": path})
        if path in self.fs["buffers"]:
            return ReadTextFileResponse(content=self.fs["buffers"][path])
        try:
            with open(path) as f:
                return ReadTextFileResponse(content=f.read())
        except FileNotFoundError:
            raise acp.RequestError.resource_not_found(path)


def mcp_server(spec):
    if spec.get("type") == "http":
        return HttpMcpServer(type="http", name=spec["name"], url=spec["url"], headers=[])
    env = [EnvVariable(name=k, value=v) for k, v in spec.get("env", {}).items()]
    return McpServerStdio(name=spec["name"], command=spec["command"], args=spec.get("args", []), env=env)


async def prompt(conn, rec, session, step):
    cancel_after = step.get("cancel_after")
    waiter = rec.waiting_for(cancel_after) if cancel_after else None
    task = asyncio.create_task(conn.prompt(session_id=session, prompt=[text_block(step["text"])]))
    if waiter is not None:
        done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if waiter in done:
            emit({"event": "cancel", "session": session})
            await conn.cancel(session_id=session)
    r = await task
    emit({"event": "prompt", "session": session, "result": wire(r)})


async def run(plan):
    rec = Recorder(plan.get("permissions", []), plan.get("fs"))
    env = dict(os.environ)
    env.update(plan.get("env", {}))
    async with acp.spawn_agent_process(rec, *plan["command"], env=env, cwd=plan["cwd"]) as (conn, proc):
        r = await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)
                if rec.fs is not None
                else FileSystemCapabilities()
            ),
            client_info=Implementation(name=plan.get("client", "acp-test"), version="1.0"),
        )
        emit({"event": "initialize", "result": wire(r)})
        session = None
        for step in plan["steps"]:
            op = step["op"]
            try:
                if op == "new":
                    servers = [mcp_server(s) for s in step.get("mcp", [])]
                    r = await conn.new_session(cwd=step["cwd"], mcp_servers=servers)
                    session = r.session_id
                    emit({"event": "new", "session": session})
                elif op == "load":
                    servers = [mcp_server(s) for s in step.get("mcp", [])]
                    r = await conn.load_session(cwd=step["cwd"], session_id=step["session"], mcp_servers=servers)
                    session = step["session"]
                    emit({"event": "load", "session": session, "result": wire(r) if r else None})
                elif op == "prompt":
                    await prompt(conn, rec, session, step)
                elif op == "wait_file":
                    while not os.path.exists(step["path"]):
                        await asyncio.sleep(0.02)
                else:
                    raise ValueError(f"unknown op {op}")
            except acp.RequestError as e:
                emit({"event": "error", "op": op, "code": e.code, "message": str(e)})
    emit({"event": "exit", "status": proc.returncode})


asyncio.run(run(json.load(open(sys.argv[1]))))
