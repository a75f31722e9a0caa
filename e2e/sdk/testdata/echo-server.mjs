// A stdio MCP server for the SDK suite (test/mcp.test.mjs), on the official MCP
// TypeScript SDK: one tool, echo, that answers "echo: <text>".
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "echo", version: "1.0.0" });
server.registerTool("echo", { description: "Echo the text back", inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: "text", text: `echo: ${text}` }] }));
await server.connect(new StdioServerTransport());
