# Production image: compiled JavaScript on the current Node.js LTS, no embedded
# PostgreSQL (DATABASE_URL is required in a container).
FROM node:26-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Optional dependencies are the embedded PostgreSQL binaries: not needed here.
RUN npm ci --omit=optional --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY server ./server
COPY db ./db
COPY bench ./bench
RUN npx tsc -p tsconfig.build.json && npm prune --omit=dev --omit=optional

FROM node:26-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY .gmrc ./
COPY db/migrations ./db/migrations
# The alert e-mail and unsubscribe page templates are read from the source tree (server/email/render.ts).
COPY server/email/templates ./server/email/templates
# The changelog (GET changelog, changelog.atom) is read from its one source (server/http/changelog.ts).
COPY docs/changelog.yml ./docs/changelog.yml
USER node
EXPOSE 3000 3001
# Migrates to the latest committed migration, then serves. The V8 flag: server/node-flags.ts.
CMD ["node", "--no-allocation-site-pretenuring", "dist/server/main.js"]
