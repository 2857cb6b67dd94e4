# Node 24 (LTS): the HTTP server is the node:http twin there (uWebSockets.js ships no build for it; README)
FROM node:24-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
ENV NODE_ENV=production
EXPOSE 8000
CMD ["node", "bin/cortado.js"]
