// A tool server on the MCP TypeScript SDK's own streamable HTTP transport, for
// mcp_http_sdk_test.cpp: the SDK's McpServer and StreamableHTTPServerTransport (stateful: a
// session id handed out at initialize), Node's http server on 127.0.0.1 port 0, the port written
// to the file TEA_PORT_FILE names, as a started HTTP service reports it.
//   node mcp_http_sdk_server.mjs <node_modules holding @modelcontextprotocol/sdk> json|sse
import { randomUUID } from "node:crypto";
import { writeFileSync, renameSync } from "node:fs";
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";

const [modules, mode] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(`${modules}/${path}`).href);
const { McpServer } = await load("@modelcontextprotocol/sdk/dist/esm/server/mcp.js");
const { StreamableHTTPServerTransport } = await load(
    "@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js");
const { z } = await load("zod/index.js");

const server = new McpServer({ name: "tea-test-http", version: "1.0.0" });
server.registerTool("echo", {
    description: "Answers with the text it was given.",
    inputSchema: { text: z.string() },
}, async ({ text }) => ({ content: [{ type: "text", text: `echo: ${text}` }] }));
server.registerTool("session", {
    description: "Answers with the session id the request came in.",
}, async (extra) => ({ content: [{ type: "text", text: String(extra.sessionId) }] }));

const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    enableJsonResponse: mode === "json",
});
await server.connect(transport);

const http = createServer((request, response) => {
    if (request.url !== "/mcp") {
        response.writeHead(404).end();
        return;
    }
    transport.handleRequest(request, response).catch((error) => {
        process.stderr.write(`${error}\n`);
        response.destroy();
    });
});
http.listen(0, "127.0.0.1", () => {
    const file = process.env.TEA_PORT_FILE;
    writeFileSync(`${file}.partial`, `${http.address().port}\n`);
    renameSync(`${file}.partial`, file);
});
