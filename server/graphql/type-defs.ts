/**
 * The partner GraphQL schema (decisions.md v1.2 "GraphQL endpoint (beta)"), as
 * SDL. The published copy (schema.graphql next to this file) is this schema
 * printed; a test keeps the two equal and CI reports breaking changes to it.
 */
import { BARS_LIMIT, RADIUS } from '../contract/params';

export const TYPE_DEFS = /* GraphQL */ `
  """
  The Partner Bar Data API as a graph (beta). Every field serves the data and the rules of its REST
  counterpart (ranking, filters, time zones, caps). Lists are Relay connections: \`first\` (1-100) is
  required, \`after\` takes a cursor from \`pageInfo.endCursor\` or an edge.
  """
  type Query {
    "GET bars/:id. Null (and a NOT_FOUND error) for an unknown id."
    bar(id: ID!): Bar

    "GET bars: by ids, category, a circle (near) or a box, and the v1.1 filters. At most ${BARS_LIMIT.max} bars in all (the REST limit)."
    bars(
      first: Int!
      after: String
      ids: [ID!]
      category: String
      near: NearInput
      box: BoxInput
      filters: BarFilters
    ): BarConnection!

    "A city by state abbreviation and name (case- and accent-insensitive, as REST paths)."
    city(state: String!, name: String!): City

    "GET events/:state/:city. Null (and a NOT_FOUND error) for an unknown city."
    events(
      state: String!
      city: String!
      first: Int!
      after: String
      "YYYY-MM-DD or an ISO 8601 date-time, as REST start_date (default today)"
      startDate: String
      "as REST end_date (default 30 days after today)"
      endDate: String
      classification: EventClassification
      groupSlug: String
    ): EventConnection

    "GET posts/:state/:city. Null (and a NOT_FOUND error) for an unknown city."
    posts(
      state: String!
      city: String!
      first: Int!
      after: String
      startDate: String
      endDate: String
      groupSlug: String
    ): PostConnection

    "GET feed/:state/:city. Null (and a NOT_FOUND error) for an unknown city."
    feed(state: String!, city: String!): Feed

    "GET search: bars and cities by name, at most the 1,000 best matches (the REST cap)."
    search(q: String!, type: SearchType, near: PointInput, first: Int!, after: String): SearchResultConnection!

    "GET categories: every category (the valid category filter values)."
    categories(first: Int!, after: String): CategoryConnection!

    "GET cities: cities with bars, by state and accent-insensitive name prefix."
    cities(state: String, q: String, first: Int!, after: String): CityConnection!

    "Your key's rate limit after this query (GitHub's rateLimit)."
    rateLimit: RateLimit!
  }

  "A circle: a center and a radius in miles (${RADIUS.min} < radiusMiles <= ${RADIUS.max}), as REST latitude, longitude, radius."
  input NearInput {
    latitude: Float!
    longitude: Float!
    radiusMiles: Float
  }

  "A position (search distance), as REST latitude and longitude."
  input PointInput {
    latitude: Float!
    longitude: Float!
  }

  "A bounding box by two opposite corners (either order), as REST corner1 and corner2."
  input BoxInput {
    corner1: PointInput!
    corner2: PointInput!
  }

  "The v1.1 filters of GET bars and GET bars_by_city."
  input BarFilters {
    "open (true) or closed (false) now by the bar's hours"
    openNow: Boolean
    "only bars open at this instant (ISO 8601 date-time with offset, judged in each bar's local time); not with openNow"
    openAt: String
    "price levels 1-4: bars with any of them"
    priceLevels: [Int!]
    "only bars whose googleRating is at least this (0-5)"
    minRating: Float
    "current occupancy statuses: bars with any of them"
    statuses: [OccupancyStatus!]
  }

  enum OccupancyStatus {
    closed
    quiet
    moderate
    busy
    very_busy
  }

  enum EventClassification {
    live_music
    dj
    trivia
    karaoke
    happy_hour
    sports
    comedy
    special
  }

  enum SearchType {
    bar
    city
  }

  type PageInfo {
    hasNextPage: Boolean!
    hasPreviousPage: Boolean!
    startCursor: String
    endCursor: String
  }

  "A bar, as GET bars/:id describes it."
  type Bar {
    id: ID!
    name: String!
    address: String
    "The bar's city (its name and state; nested lists as City)."
    city: City!
    state: String!
    zipCode: String
    latitude: Float!
    longitude: Float!
    phone: String
    website: String
    googleRating: Float
    googleRatingsTotal: Int
    primaryCategory: Category
    categories(first: Int!, after: String): CategoryConnection!
    hours: Hours!
    profilePictureUrl: String
    photos(first: Int!, after: String): PhotoConnection!
    occupancy: Occupancy!
    description: String
    priceLevel: Int
    "The bar's next upcoming events (at most 10, as GET bars/:id)."
    events(first: Int!, after: String): EventConnection!
    "The bar's posts, newest first."
    posts(first: Int!, after: String): PostConnection!
  }

  type Category {
    name: String!
    slug: String!
    "Bars in this category (GET categories only; null elsewhere)."
    barCount: Int
  }

  "Opening hours by local day; a close earlier than its open closes after midnight."
  type Hours {
    monday: [OpeningRange!]!
    tuesday: [OpeningRange!]!
    wednesday: [OpeningRange!]!
    thursday: [OpeningRange!]!
    friday: [OpeningRange!]!
    saturday: [OpeningRange!]!
    sunday: [OpeningRange!]!
  }

  type OpeningRange {
    "HH:MM, 24-hour local time"
    open: String!
    "HH:MM, 24-hour local time"
    close: String!
  }

  type Photo {
    url: String!
  }

  type Occupancy {
    currentIntensity: Int!
    status: OccupancyStatus!
    "Today's hourly profile in the bar's local time (hour 0-23)."
    hourly: [HourlyIntensity!]!
  }

  type HourlyIntensity {
    hour: Int!
    intensity: Int!
  }

  type City {
    name: String!
    state: String!
    "GET bars_by_city: the city's bars in name order, optionally one group's, with the v1.1 filters."
    bars(first: Int!, after: String, groupSlug: String, filters: BarFilters): BarConnection!
    "The city's busiest bars now (GET bars_by_city busiest_bars)."
    busiestBars(first: Int!, after: String): BusiestBarConnection!
    "Events today in the city's local day (GET bars_by_city events_today)."
    eventsToday(first: Int!, after: String): EventConnection!
    "The city's groups (GET groups/:state/:city)."
    groups(first: Int!, after: String): GroupConnection!
  }

  type BusiestBar {
    currentIntensity: Int!
    bar: Bar!
  }

  type Group {
    name: String!
    slug: String!
    barCount: Int!
  }

  "An event. title and name are the same text (REST's full and short forms)."
  type Event {
    id: ID!
    title: String!
    name: String!
    description: String
    classification: EventClassification!
    startAt: String!
    endAt: String!
    createdAt: String!
    bar: Bar!
  }

  "A post. text and content are the same text (GET posts and the feed)."
  type Post {
    id: ID!
    text: String!
    content: String!
    createdAt: String!
    "The author (feed posts; null elsewhere)."
    user: PostUser
    "Media (feed posts; null elsewhere)."
    media: [Photo!]
    bar: Bar!
  }

  type PostUser {
    id: ID!
    username: String!
  }

  type Feed {
    city: City!
    "Posts of the feed, newest first."
    posts(first: Int!, after: String): PostConnection!
    "Upcoming events of the feed."
    events(first: Int!, after: String): EventConnection!
  }

  "A search match: a bar or a city."
  type SearchResult {
    type: SearchType!
    id: ID!
    "A city's name includes its state."
    name: String!
    address: String
    state: String
    latitude: Float!
    longitude: Float!
    priceLevel: Int
    "Miles from near (bars, when near is given)."
    distance: Float
    imageUrl: String
    "The bar (type bar)."
    bar: Bar
  }

  type RateLimit {
    "Points this query cost."
    cost: Int!
    "The limit of your most constrained bucket (-1 when every bucket is unlimited)."
    limit: Int!
    "Requests (points) left in that bucket (-1 when unlimited)."
    remaining: Int!
    "Requests (points) used in that bucket's window (0 when unlimited)."
    used: Int!
    "When that bucket's window resets (ISO 8601)."
    resetAt: String!
    "The query's node count (at most the node limit, 10,000)."
    nodeCount: Int!
  }

  type BarConnection {
    edges: [BarEdge!]!
    nodes: [Bar!]!
    pageInfo: PageInfo!
    totalCount: Int!
  }
  type BarEdge {
    cursor: String!
    node: Bar!
  }
  type EventConnection {
    edges: [EventEdge!]!
    nodes: [Event!]!
    pageInfo: PageInfo!
    totalCount: Int!
  }
  type EventEdge {
    cursor: String!
    node: Event!
  }
  type PostConnection {
    edges: [PostEdge!]!
    nodes: [Post!]!
    pageInfo: PageInfo!
    totalCount: Int!
  }
  type PostEdge {
    cursor: String!
    node: Post!
  }
  type CategoryConnection {
    edges: [CategoryEdge!]!
    nodes: [Category!]!
    pageInfo: PageInfo!
    totalCount: Int!
  }
  type CategoryEdge {
    cursor: String!
    node: Category!
  }
  type PhotoConnection {
    edges: [PhotoEdge!]!
    nodes: [Photo!]!
    pageInfo: PageInfo!
    totalCount: Int!
  }
  type PhotoEdge {
    cursor: String!
    node: Photo!
  }
  type CityConnection {
    edges: [CityEdge!]!
    nodes: [City!]!
    pageInfo: PageInfo!
    totalCount: Int!
  }
  type CityEdge {
    cursor: String!
    node: City!
  }
  type BusiestBarConnection {
    edges: [BusiestBarEdge!]!
    nodes: [BusiestBar!]!
    pageInfo: PageInfo!
    totalCount: Int!
  }
  type BusiestBarEdge {
    cursor: String!
    node: BusiestBar!
  }
  type GroupConnection {
    edges: [GroupEdge!]!
    nodes: [Group!]!
    pageInfo: PageInfo!
    totalCount: Int!
  }
  type GroupEdge {
    cursor: String!
    node: Group!
  }
  """
  Search matches. totalCount is REST's total_count (counted up to 1,001 for broad terms); the list
  ends at the 1,000th match.
  """
  type SearchResultConnection {
    edges: [SearchResultEdge!]!
    nodes: [SearchResult!]!
    pageInfo: PageInfo!
    totalCount: Int!
  }
  type SearchResultEdge {
    cursor: String!
    node: SearchResult!
  }
`;
