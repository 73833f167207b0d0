# The service in a container: Node 24 slim, production dependencies only, a non-root user.
# At start it applies the migrations, then serves the API and runs the worker.
#   docker build -t billing . && docker run -p 3000:3000 -v billing-data:/data billing
# compose.yaml runs it on PostgreSQL and Redis.
FROM node:24-slim

WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
# --ignore-scripts: the image's own Node runs the service, the `node` package's download is not needed.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY src ./src

# SQLite by default, on a volume; set DATABASE_URL=postgres://… to use PostgreSQL.
RUN mkdir /data && chown node:node /data
VOLUME /data
ENV HOST=0.0.0.0 \
    PORT=3000 \
    DATABASE_URL=sqlite:/data/billing.db
USER node
EXPOSE 3000

HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/api/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

CMD ["sh", "-c", "node bin/billing.js migrate && exec node bin/billing.js serve"]
