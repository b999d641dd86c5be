// An ACP client built on the official TypeScript SDK (@agentclientprotocol/sdk,
// pinned in package.json), driven by a JSON plan so that the Go tests decide
// what to do and assert what happened (../../jsclient_test.go).
//
// Usage: node client.mjs PLAN.json
//
// The plan: {"agent": ["/path/to/ferry", "acp", ...], "cwd": DIR, "env": {...},
//            "steps": [STEP, ...]}
// Steps (each answered by one entry of the printed "steps" list):
//   {"op": "spawn"}                start the agent process (a fresh one each time)
//   {"op": "initialize", "fs": true, "terminal": false, "protocolVersion": 1}
//   {"op": "new", "cwd": DIR, "mcpServers": [...]}
//   {"op": "load", "cwd": DIR, "sessionId": ID|"" (the last session), "mcpServers": [...]}
//   {"op": "prompt", "text": "..." | "prompt": [ContentBlock...], "sessionId": ID (default: the
//    last session), "answers": ["allow_once", "reject_once", "allow_always",
//    "cancelled"], "cancelOn": "agent_message_chunk"|"tool_call", "cancelWhenFile": PATH}
//                                 cancelOn: session/cancel at the first update of that kind;
//                                 cancelWhenFile: once PATH holds a line (cancelMs: from cancel to answer)
//   {"op": "set_mode", "modeId": "plan"}
//   {"op": "set_config_option", "configId": "model", "value": "..."}
//   {"op": "active", "text": "..."}   session/new and a prompt through the SDK's ActiveSession
//   {"op": "raw", "method": "...", "params": {...}}   any request
//   {"op": "buffer", "path": ABS, "text": "..."}   an unsaved editor buffer fs/read_text_file serves
//   {"op": "close"}                end the agent's stdin and wait for it to exit
// A step that fails ends the plan, but for prompt and load steps and those with "mayFail".
// Permission requests take the next of the prompt's "answers" (an option of that kind, the
// cancelled outcome, or "cancel": session/cancel, then the cancelled outcome); one with no answer left is recorded as unexpected and rejected once.
// fs/write_text_file is recorded, not written to disk: the test can tell the agent did not
// write the file itself. terminal/* run real processes (each in its own process group).
//
// Output (stdout, one JSON document): {"steps": [{op, ok, result | error: {code, message},
// ms, updates: [session/update params], permissions: [{request, answer}], reads: [params],
// writes: [params], wire: [what came from the agent, in order: method (session/update:KIND)
// or "response"], terminals: [terminal/create params], kills and releases: [{terminalId,
// running}], cancelMs, cancelRequests: [$/cancel_request params], schemaErrors: [what ACP's schema refuses in the answer and
// the updates]}], "exits": [{code, signal} of each closed process]}.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
// The SDK's generated zod schemas of ACP v1 (not exported by the package:
// imported by path) check what ferry sends against the schema.
import * as schema from "./node_modules/@agentclientprotocol/sdk/dist/v1/schema/zod.gen.js";

// The schema of each op's answer.
const resultSchemas = {
  initialize: schema.zInitializeResponse,
  new: schema.zNewSessionResponse,
  load: schema.zLoadSessionResponse,
  prompt: schema.zPromptResponse,
  set_mode: schema.zSetSessionModeResponse,
  set_config_option: schema.zSetSessionConfigOptionResponse,
};

// invalid returns what the schema finds wrong with value, or null.
function invalid(zschema, value) {
  const r = zschema.safeParse(value);
  return r.success ? null : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
}

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = { steps: [], exits: [] };
const buffers = new Map();
let agent = null; // {child, conn, exited}
let sessionId = "";
let current = null; // the step result being filled
let onUpdate = null; // the running prompt's cancel trigger

const terminals = new Map();
let terminalSeq = 0;

function terminal(id) {
  const t = terminals.get(id);
  if (!t) throw acp.RequestError.invalidParams({ terminalId: id }, `no terminal ${id}`);
  return t;
}

function killGroup(t) {
  if (t.exit === null && t.proc.pid) {
    try {
      process.kill(-t.proc.pid, "SIGKILL");
    } catch {}
  }
}

function startAgent() {
  let conn = null;
  const child = spawn(plan.agent[0], plan.agent.slice(1), {
    cwd: plan.cwd,
    env: { ...process.env, ...(plan.env ?? {}) },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  child.stdin.on("error", () => {}); // a dead agent is reported by its exit
  const wire = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  // Updates are recorded as they come off the wire, before the connection
  // dispatches them: the SDK runs a notification's handlers after awaits
  // but settles a response at once, so a handler may see an update after
  // the answer that followed it on the wire.
  const tap = new TransformStream({
    transform(msg, controller) {
      if (msg && typeof msg === "object") {
        const u = msg.method === acp.methods.client.session.update ? `:${msg.params?.update?.sessionUpdate}` : "";
        current?.wire.push(msg.method ? msg.method + u : "response");
      }
      if (msg && typeof msg === "object" && !("id" in msg)) {
        if (msg.method === acp.methods.client.session.update) {
          const bad = invalid(schema.zSessionNotification, msg.params);
          if (bad) current?.schemaErrors.push(`session/update ${JSON.stringify(msg.params).slice(0, 500)}: ${bad}`);
          current?.updates.push(msg.params);
          onUpdate?.(msg.params);
        } else if (msg.method === acp.methods.protocol.cancelRequest) {
          current?.cancelRequests.push(msg.params); // the agent withdrew one of its requests
        } else {
          current?.schemaErrors.push(`unexpected notification ${msg.method}`);
        }
      }
      controller.enqueue(msg);
    },
  });
  const stream = { writable: wire.writable, readable: wire.readable.pipeThrough(tap) };
  const app = acp
    .client({ name: "ferry-test-client" })
    .onNotification(acp.methods.client.session.update, () => {}) // recorded by the tap
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      const want = current?.answers?.shift();
      let outcome;
      if (want === "cancel") {
        // The user stops the turn while asked: ACP has the client send
        // session/cancel and answer its open questions cancelled.
        current.cancelAt = performance.now();
        conn.agent.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
        outcome = { outcome: "cancelled" };
      } else if (want === "cancelled") {
        outcome = { outcome: "cancelled" };
      } else {
        const kind = want ?? "reject_once";
        const opt = params.options.find((o) => o.kind === kind);
        outcome = opt
          ? { outcome: "selected", optionId: opt.optionId }
          : { outcome: "cancelled" };
      }
      current?.permissions.push({ request: params, answer: want ?? "unexpected", outcome });
      return { outcome };
    })
    .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
      current?.reads.push(params);
      if (buffers.has(params.path)) {
        let text = buffers.get(params.path);
        if (params.line != null || params.limit != null) {
          const lines = text.split("\n");
          const start = Math.max((params.line ?? 1) - 1, 0);
          text = lines.slice(start, params.limit != null ? start + params.limit : undefined).join("\n");
        }
        return { content: text };
      }
      try {
        return { content: readFileSync(params.path, "utf8") };
      } catch (e) {
        throw acp.RequestError.resourceNotFound(params.path);
      }
    })
    .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
      current?.writes.push(params);
      buffers.set(params.path, params.content);
      return {};
    })
    // Terminals are real processes, as an editor runs them.
    .onRequest(acp.methods.client.terminal.create, ({ params }) => {
      current?.terminals.push(params);
      const env = { ...process.env };
      for (const v of params.env ?? []) env[v.name] = v.value;
      const proc = spawn(params.command, params.args ?? [], {
        cwd: params.cwd ?? plan.cwd,
        env,
        stdio: ["ignore", "pipe", "pipe"],
        detached: true, // its own process group, killed whole
      });
      const t = { proc, output: "", truncated: false, exit: null, limit: params.outputByteLimit ?? null };
      const add = (chunk) => {
        t.output += chunk.toString("utf8");
        if (t.limit != null && Buffer.byteLength(t.output) > t.limit) {
          t.output = Buffer.from(t.output).subarray(-t.limit).toString("utf8");
          t.truncated = true;
        }
      };
      proc.stdout.on("data", add);
      proc.stderr.on("data", add);
      t.exited = new Promise((resolve) =>
        proc.on("close", (code, signal) => {
          t.exit = { exitCode: code, signal };
          resolve(t.exit);
        }),
      );
      proc.on("error", (e) => {
        add(String(e));
        t.exit = { exitCode: 127, signal: null };
      });
      const id = `term-${++terminalSeq}`;
      terminals.set(id, t);
      return { terminalId: id };
    })
    .onRequest(acp.methods.client.terminal.output, ({ params }) => {
      const t = terminal(params.terminalId);
      return { output: t.output, truncated: t.truncated, exitStatus: t.exit };
    })
    .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
      return await terminal(params.terminalId).exited;
    })
    .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
      const t = terminal(params.terminalId);
      current?.kills.push({ terminalId: params.terminalId, running: t.exit === null });
      killGroup(t);
      return {};
    })
    .onRequest(acp.methods.client.terminal.release, ({ params }) => {
      const t = terminal(params.terminalId);
      current?.releases.push({ terminalId: params.terminalId, running: t.exit === null });
      killGroup(t);
      terminals.delete(params.terminalId);
      return {};
    });
  conn = app.connect(stream);
  return { child, conn, exited };
}

async function run(step) {
  const ctx = agent?.conn.agent;
  switch (step.op) {
    case "spawn":
      agent = startAgent();
      return { pid: agent.child.pid };
    case "initialize":
      return ctx.request(acp.methods.agent.initialize, {
        protocolVersion: step.protocolVersion ?? acp.PROTOCOL_VERSION,
        clientCapabilities: {
          fs: { readTextFile: !!step.fs, writeTextFile: !!step.fs },
          terminal: !!step.terminal,
        },
        clientInfo: { name: "ferry-test-client", version: "1.0.0" },
      });
    case "new": {
      const res = await ctx.request(acp.methods.agent.session.new, {
        cwd: step.cwd ?? plan.cwd,
        mcpServers: step.mcpServers ?? [],
      });
      sessionId = res.sessionId;
      return res;
    }
    case "load": {
      const id = step.sessionId || sessionId;
      const res = await ctx.request(acp.methods.agent.session.load, {
        sessionId: id,
        cwd: step.cwd ?? plan.cwd,
        mcpServers: step.mcpServers ?? [],
      });
      sessionId = id;
      return res ?? {};
    }
    case "prompt": {
      let cancelAt = 0;
      const cancel = () => {
        if (!cancelAt) {
          cancelAt = performance.now();
          ctx.notify(acp.methods.agent.session.cancel, { sessionId });
        }
      };
      if (step.cancelOn) {
        onUpdate = (u) => {
          if (u.update.sessionUpdate === step.cancelOn) cancel();
        };
      }
      let poll = null;
      if (step.cancelWhenFile) {
        // Once the file holds a whole line (a command wrote it: it runs).
        poll = setInterval(() => {
          try {
            if (readFileSync(step.cancelWhenFile, "utf8").endsWith("\n")) cancel();
          } catch {}
        }, 20);
      }
      try {
        const res = await ctx.request(acp.methods.agent.session.prompt, {
          sessionId: step.sessionId || sessionId,
          prompt: step.prompt ?? [{ type: "text", text: step.text }],
        });
        cancelAt ||= current.cancelAt ?? 0;
        if (cancelAt) current.cancelMs = Math.round(performance.now() - cancelAt);
        return res;
      } finally {
        onUpdate = null;
        clearInterval(poll);
      }
    }
    case "set_mode":
      return (await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: step.modeId })) ?? {};
    case "set_config_option":
      return ctx.request(acp.methods.agent.session.setConfigOption, {
        sessionId,
        configId: step.configId,
        value: step.value,
      });
    case "active": {
      // The SDK's own session helper, as an editor built on it drives a
      // session: buildSession().withSession(), prompt, readText.
      return await ctx.buildSession(step.cwd ?? plan.cwd).withSession(async (session) => {
        sessionId = session.sessionId;
        const reply = session.readText();
        const res = await session.prompt(step.text);
        return { sessionId: session.sessionId, modes: session.modes, stopReason: res.stopReason, text: await reply };
      });
    }
    case "raw": // any request, as a client of another ACP version might send it
      return (await ctx.request(step.method, step.params ?? {})) ?? {};
    case "buffer":
      buffers.set(step.path, step.text);
      return {};
    case "close": {
      agent.child.stdin.end();
      const timeout = new Promise((resolve) => setTimeout(() => resolve(null), step.waitMs ?? 10000));
      const exit = await Promise.race([agent.exited, timeout]);
      if (exit === null) {
        agent.child.kill("SIGKILL");
        throw new Error(`the agent did not exit within ${step.waitMs ?? 10000} ms of its stdin closing`);
      }
      agent.conn.close();
      agent = null;
      out.exits.push(exit);
      return exit;
    }
    default:
      throw new Error(`unknown op ${step.op}`);
  }
}

for (const step of plan.steps) {
  current = {
    op: step.op,
    ok: true,
    updates: [],
    permissions: [],
    reads: [],
    writes: [],
    schemaErrors: [],
    cancelRequests: [],
    terminals: [],
    kills: [],
    releases: [],
    wire: [],
    answers: [...(step.answers ?? [])],
  };
  const t0 = performance.now();
  try {
    current.result = await run(step);
    const bad = resultSchemas[step.op] && invalid(resultSchemas[step.op], current.result);
    if (bad) current.schemaErrors.push(`${step.op} answer: ${bad}`);
  } catch (e) {
    current.ok = false;
    current.error = { code: e?.code ?? null, message: String(e?.message ?? e), data: e?.data ?? null };
  }
  current.ms = Math.round(performance.now() - t0);
  delete current.answers;
  delete current.cancelAt;
  out.steps.push(current);
  if (!current.ok && step.op !== "prompt" && step.op !== "load" && !step.mayFail) break; // later steps need this one
}
if (agent) {
  agent.child.stdin.end();
  const exit = await Promise.race([agent.exited, new Promise((r) => setTimeout(() => r(null), 10000))]);
  if (exit === null) agent.child.kill("SIGKILL");
  out.exits.push(exit ?? { code: null, signal: "SIGKILL (did not exit)" });
}
for (const t of terminals.values()) killGroup(t); // nothing left running
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);
