/**
 * Word lists the demo generator combines into names, addresses, descriptions,
 * event titles and posts. Only vocabulary lives here: places come from
 * datasets (see cities.ts) and every choice is made in SQL (see sql.ts).
 */

export type HoursKind = 'regular' | 'club' | 'daytime';

export interface CategoryDef {
  slug: string;
  name: string;
  /** How it reads inside a sentence ("a lively dive bar in Austin"). */
  noun: string;
  /** Relative frequency as a primary category. */
  weight: number;
  /** Typical price level 1-4. */
  price: number;
  /** Last words of a name ("Blue Moon Tavern"). */
  nameWords: string[];
  hours: HoursKind;
}

export const categories: CategoryDef[] = [
  { slug: 'dive-bar', name: 'Dive Bar', noun: 'dive bar', weight: 10, price: 1, nameWords: ['Bar', 'Tavern', 'Saloon', 'Lounge', 'Inn'], hours: 'regular' },
  { slug: 'cocktail-bar', name: 'Cocktail Bar', noun: 'cocktail bar', weight: 10, price: 3, nameWords: ['Cocktail Bar', 'Social Club', 'Bar', 'Cocktail Co.'], hours: 'regular' },
  { slug: 'sports-bar', name: 'Sports Bar', noun: 'sports bar', weight: 9, price: 2, nameWords: ['Sports Bar', 'Sports Grill', 'Bar & Grill', 'Tap House'], hours: 'regular' },
  { slug: 'pub', name: 'Pub', noun: 'pub', weight: 9, price: 2, nameWords: ['Pub', 'Public House', 'Alehouse', 'Tavern'], hours: 'regular' },
  { slug: 'brewery', name: 'Brewery', noun: 'brewery', weight: 7, price: 2, nameWords: ['Brewing Co.', 'Brewery', 'Beer Works', 'Brewing'], hours: 'daytime' },
  { slug: 'wine-bar', name: 'Wine Bar', noun: 'wine bar', weight: 6, price: 3, nameWords: ['Wine Bar', 'Wine Room', 'Cellar', 'Vinoteca'], hours: 'regular' },
  { slug: 'nightclub', name: 'Nightclub', noun: 'nightclub', weight: 5, price: 3, nameWords: ['Club', 'Nightclub', 'Ballroom', 'Social'], hours: 'club' },
  { slug: 'lounge', name: 'Lounge', noun: 'lounge', weight: 5, price: 3, nameWords: ['Lounge', 'Room', 'Bar'], hours: 'regular' },
  { slug: 'irish-pub', name: 'Irish Pub', noun: 'Irish pub', weight: 4, price: 2, nameWords: ['Irish Pub', 'Pub', 'Public House'], hours: 'regular' },
  { slug: 'gastropub', name: 'Gastropub', noun: 'gastropub', weight: 4, price: 3, nameWords: ['Gastropub', 'Kitchen & Bar', 'Eatery'], hours: 'regular' },
  { slug: 'taproom', name: 'Taproom', noun: 'taproom', weight: 4, price: 2, nameWords: ['Taproom', 'Tap House', 'Taps'], hours: 'daytime' },
  { slug: 'karaoke-bar', name: 'Karaoke Bar', noun: 'karaoke bar', weight: 3, price: 2, nameWords: ['Karaoke', 'Karaoke Lounge', 'Singalong Bar'], hours: 'regular' },
  { slug: 'rooftop-bar', name: 'Rooftop Bar', noun: 'rooftop bar', weight: 3, price: 4, nameWords: ['Rooftop', 'Skybar', 'Terrace', 'Roof Deck'], hours: 'regular' },
  { slug: 'speakeasy', name: 'Speakeasy', noun: 'speakeasy', weight: 3, price: 3, nameWords: ['Speakeasy', 'Hideaway', 'Parlor', 'Back Room'], hours: 'regular' },
  { slug: 'beer-garden', name: 'Beer Garden', noun: 'beer garden', weight: 3, price: 2, nameWords: ['Beer Garden', 'Biergarten', 'Yard'], hours: 'daytime' },
  { slug: 'whiskey-bar', name: 'Whiskey Bar', noun: 'whiskey bar', weight: 3, price: 3, nameWords: ['Whiskey Bar', 'Bourbon Room', 'Whiskey House'], hours: 'regular' },
  { slug: 'live-music-venue', name: 'Live Music Venue', noun: 'live music venue', weight: 3, price: 2, nameWords: ['Music Hall', 'Stage', 'Live', 'Room'], hours: 'regular' },
  { slug: 'tiki-bar', name: 'Tiki Bar', noun: 'tiki bar', weight: 2, price: 2, nameWords: ['Tiki Bar', 'Tiki Lounge', 'Hut'], hours: 'regular' },
  { slug: 'jazz-bar', name: 'Jazz Bar', noun: 'jazz bar', weight: 2, price: 3, nameWords: ['Jazz Club', 'Jazz Bar', 'Supper Club'], hours: 'regular' },
  { slug: 'lgbtq-bar', name: 'LGBTQ+ Bar', noun: 'LGBTQ+ bar', weight: 2, price: 2, nameWords: ['Bar', 'Club', 'Lounge'], hours: 'regular' },
  { slug: 'hotel-bar', name: 'Hotel Bar', noun: 'hotel bar', weight: 2, price: 4, nameWords: ['Bar', 'Lounge', 'Library Bar'], hours: 'regular' },
  { slug: 'piano-bar', name: 'Piano Bar', noun: 'piano bar', weight: 1, price: 3, nameWords: ['Piano Bar', 'Piano Lounge'], hours: 'regular' },
];

export const words = {
  adjectives: [
    'Rusty', 'Blue', 'Golden', 'Silver', 'Crooked', 'Lucky', 'Salty', 'Velvet', 'Copper', 'Iron', 'Red', 'Black',
    'Green', 'Wild', 'Jolly', 'Sleepy', 'Hidden', 'Little', 'Old', 'Broken', 'Dusty', 'Midnight', 'Electric', 'Lazy',
    'Howling', 'Wandering', 'Roaring', 'Thirsty', 'Happy', 'Merry', 'Lonesome', 'Brass', 'Stone', 'Painted', 'Tipsy',
    'Noble', 'Royal', 'Gilded', 'Smoky', 'Neon', 'Crimson', 'Amber', 'Hazy', 'Frosty', 'Flying', 'Dancing', 'Laughing',
    'Whistling', 'Rolling', 'Twisted', 'Stubborn', 'Honest', 'Bitter', 'Sweet', 'Northern', 'Southern', 'Western',
    'Drunken', 'Mighty', 'Hungry',
  ],
  nouns: [
    'Anchor', 'Moon', 'Fox', 'Hound', 'Owl', 'Crow', 'Raven', 'Stag', 'Bear', 'Wolf', 'Lion', 'Horse', 'Goat',
    'Rooster', 'Pig', 'Duck', 'Swan', 'Heron', 'Pelican', 'Mermaid', 'Pirate', 'Sailor', 'Captain', 'Barrel', 'Keg',
    'Tap', 'Bottle', 'Flask', 'Tankard', 'Lantern', 'Compass', 'Harbor', 'Lighthouse', 'Saddle', 'Spur', 'Boot',
    'Crown', 'Castle', 'Bridge', 'Mill', 'Forge', 'Hammer', 'Anvil', 'Arrow', 'Dagger', 'Clover', 'Thistle', 'Rose',
    'Oak', 'Pine', 'Willow', 'Acorn', 'Pearl', 'Diamond', 'Star', 'Comet', 'Rocket', 'Jukebox', 'Record', 'Trumpet',
    'Banjo', 'Fiddle', 'Piano', 'Whistle', 'Bell', 'Monkey', 'Tiger', 'Dragon', 'Unicorn', 'Phoenix', 'Coyote',
    'Buffalo', 'Rattlesnake', 'Armadillo', 'Otter', 'Beaver', 'Moose', 'Elk', 'Magpie', 'Sparrow',
  ],
  // Possessives: "Murphy's Pub", "O'Malley's Tavern", "Peña's Cantina".
  people: [
    'Murphy', "O'Malley", 'Kelly', 'Sullivan', 'Doyle', 'McGee', 'Flanagan', 'Casey', 'Finnegan', 'Brennan', 'Riley',
    'Duffy', 'Nolan', 'Quinn', 'Walsh', "O'Reilly", 'Gallagher', 'Callahan', 'Donovan', 'Shaw', 'Miller', 'Baker',
    'Parker', 'Carter', 'Jackson', 'Hernández', 'García', 'Muñoz', 'Peña', 'Núñez', 'Rosie', 'Lucy', 'Molly', 'Hank',
    'Eddie', 'Billy', 'Frankie', 'Charlie', 'Sally', 'Mabel', 'Otto', 'Gus', 'Lou', 'Mickey', 'Tony', 'Sal', 'Vinny',
    'Dot', 'Joe', 'Ruby', 'Zoë', 'Renée', 'José', 'Björn',
  ],
  streets: [
    'Main', 'Oak', 'Maple', 'Elm', 'Pine', 'Cedar', 'Walnut', 'Chestnut', 'Spruce', 'Market', 'Church', 'Water',
    'Front', 'Mill', 'Bridge', 'Washington', 'Lincoln', 'Jefferson', 'Madison', 'Franklin', 'Park', 'Lake', 'River',
    'Hill', 'High', 'Center', 'Union', 'Grand', 'Sycamore', 'Magnolia', 'Ridge', 'Spring', 'Depot', 'Railroad',
    '1st', '2nd', '3rd', '4th', '5th', '6th', '7th', '8th', '9th', '10th', '11th', '12th',
  ],
  streetSuffixes: ['St', 'St', 'St', 'Ave', 'Ave', 'Blvd', 'Rd', 'Dr', 'Ln', 'Way', 'Pl'],
  vibes: [
    'A laid-back', 'A lively', 'A cozy', 'A no-frills', 'A buzzing', 'An unpretentious', 'A stylish',
    'A friendly neighborhood', 'A beloved', 'A candlelit', 'A loud and proud', 'A classic', 'A tiny', 'A sprawling',
  ],
  features: [
    'cheap pitchers', 'a well-loved jukebox', 'a pool table', 'craft cocktails', 'an excellent happy hour',
    'a big patio', 'a dozen TVs', 'rotating taps', 'natural wines', 'late-night tacos', 'live music on weekends',
    'a fireplace', 'board games', 'vinyl on the turntable', 'a dog-friendly patio', 'smash burgers', 'shuffleboard',
    'darts', 'skee-ball', 'local beers on draft', 'a long whiskey list', 'a hidden back room', 'skyline views',
    'friendly bartenders', 'strong pours', 'a DJ on Fridays', 'frozen margaritas', 'a jalapeño-infused tequila list',
  ],
  closers: [
    'Cash only.', 'Reservations recommended on weekends.', 'Walk-ins welcome.', 'Kitchen open until late.',
    'Family owned since 1987.', 'Dogs welcome on the patio.', 'No cover, ever.', 'Ask about private events.',
    'Happy hour every weekday.', 'A local institution.',
  ],
  postOpeners: [
    'Great night at', 'Finally tried', "Can't beat happy hour at", 'Back at', 'Trivia night at', 'Birthday drinks at',
    'Date night at', 'Watching the game at', 'First time at', 'Another Friday at', 'Shoutout to the staff at',
    'Sunday funday at', 'Late night at', 'Quick beer at', 'Catching up with friends at',
  ],
  postRemarks: [
    'The margaritas are dangerous.', 'Packed tonight, worth the wait.', 'Best old fashioned in town.',
    'Live band was fantastic 🎸', 'Cheers 🍻', 'The patio is the place to be.', 'Wings were on point.',
    'Bartender remembered my order.', 'New seasonal IPA is great.', 'Quiet enough to talk, loud enough to feel alive.',
    'Line out the door by 10.', 'Karaoke got wild 🎤', 'Lost at trivia again 😅', 'Happy hour deals are unbeatable.',
    'Great vibes, slow service.', 'Their café-style espresso martini ☕ is a must.', 'Will be back!',
    '10/10 would recommend.', 'Music a bit loud but fun.', 'Pricey but worth it.', 'Free popcorn!',
    'Saw the best sunset from the bar.', 'Crowd was young and loud.', 'Perfect spot before the show.',
  ],
  userFirst: [
    'alex', 'sam', 'jordan', 'taylor', 'casey', 'riley', 'morgan', 'jamie', 'drew', 'quinn', 'avery', 'blake',
    'maria', 'jose', 'li', 'wei', 'priya', 'omar', 'fatima', 'kai', 'noa', 'leah', 'ben', 'nina', 'tom', 'eva',
  ],
  userSecond: [
    'hops', 'pints', 'barfly', 'nightowl', 'sipper', 'brews', 'cheers', 'tipsy', 'neat', 'onrocks', 'lager', 'stout',
    'smith', 'nguyen', 'garcia', 'kim', 'patel', 'jones', 'brown', 'lee', 'martin', 'lopez', 'walker', 'young',
  ],
} satisfies Record<string, string[]>;

export type Classification =
  'live_music' | 'dj' | 'trivia' | 'karaoke' | 'happy_hour' | 'sports' | 'comedy' | 'special';

export interface EventKindDef {
  classification: Classification;
  weight: number;
  /** Titles; "{day}" is replaced by the local weekday name, "{act}" by a generated act name. */
  titles: string[];
  descriptions: string[];
  /** Earliest local start, minutes after midnight, and how many 30-minute steps later it may start. */
  startMinute: number;
  startSteps: number;
  /** Shortest duration in minutes and how many 30-minute steps longer it may last (always 1-4 h). */
  minMinutes: number;
  durationSteps: number;
}

export const eventKinds: EventKindDef[] = [
  {
    classification: 'live_music', weight: 22,
    titles: ['Live Music: {act}', 'Live on Stage: {act}', 'Tonight: {act}', '{act} Live'],
    descriptions: ['Local bands on our stage. No cover before 9.', 'An evening of live music. Doors open 30 minutes early.', 'Original songs and covers all night.'],
    startMinute: 19 * 60, startSteps: 7, minMinutes: 120, durationSteps: 4,
  },
  {
    classification: 'dj', weight: 14,
    titles: ['DJ {act}', '{day} Night DJ Set', 'Vinyl Night with DJ {act}', 'Throwback Dance Party'],
    descriptions: ['Dance floor open until close.', 'House, disco and throwbacks all night.', 'Spinning records till late.'],
    startMinute: 21 * 60, startSteps: 5, minMinutes: 180, durationSteps: 2,
  },
  {
    classification: 'trivia', weight: 14,
    titles: ['{day} Trivia Night', 'Pub Quiz', 'Music Bingo', 'Movie Trivia Night'],
    descriptions: ['Teams of up to six. Prizes for the top three.', 'Free to play, bar tab prizes.', 'Six rounds, one champion.'],
    startMinute: 19 * 60, startSteps: 4, minMinutes: 90, durationSteps: 2,
  },
  {
    classification: 'karaoke', weight: 10,
    titles: ['Karaoke Night', '{day} Karaoke', 'Live Band Karaoke', 'Karaoke & Cocktails'],
    descriptions: ['Sign up at the bar. Thousands of songs.', 'Grab the mic and sing your heart out.'],
    startMinute: 20 * 60, startSteps: 5, minMinutes: 120, durationSteps: 4,
  },
  {
    classification: 'happy_hour', weight: 16,
    titles: ['Happy Hour', 'Extended Happy Hour', 'Half-Price Wine Hour', '$5 Cocktail Hour', 'Oyster Happy Hour'],
    descriptions: ['Discounted drafts, wells and snacks.', 'Half-price appetizers at the bar.', 'Daily specials on local beers.'],
    startMinute: 15 * 60, startSteps: 6, minMinutes: 60, durationSteps: 4,
  },
  {
    classification: 'sports', weight: 12,
    titles: ['Game Day Watch Party', 'Football Watch Party', 'Fight Night', 'Soccer on the Big Screen', 'Hockey Night', 'Playoff Watch Party'],
    descriptions: ['Every game on every screen, sound on for the main event.', 'Bucket specials during the game.', 'Reserve a table for the big game.'],
    startMinute: 12 * 60, startSteps: 17, minMinutes: 120, durationSteps: 4,
  },
  {
    classification: 'comedy', weight: 6,
    titles: ['Stand-up Comedy Showcase', 'Open Mic Comedy', 'Improv Night', 'Late-Night Laughs'],
    descriptions: ['Touring and local comics. Two-drink minimum.', 'Sign up at 7, show at 8.', 'Unscripted and unpredictable.'],
    startMinute: 19 * 60, startSteps: 5, minMinutes: 60, durationSteps: 3,
  },
  {
    classification: 'special', weight: 6,
    titles: ['Whiskey Tasting', 'Anniversary Party', 'Costume Party', 'Tap Takeover', 'Wine Tasting', 'Crawfish Boil', 'Paint & Sip', 'Salsa Night', 'Charity Fundraiser'],
    descriptions: ['One night only. Limited tickets at the door.', 'Join us for something a little different.', 'Specials all night long.'],
    startMinute: 14 * 60, startSteps: 14, minMinutes: 60, durationSteps: 6,
  },
];

/** Act names for live music and DJs. */
export const acts = {
  first: ['Velvet', 'Neon', 'Midnight', 'Lonesome', 'Electric', 'Copper', 'Saint', 'Little', 'Big', 'Golden', 'Dusty', 'Wild'],
  second: ['Owls', 'Coyotes', 'Rivers', 'Hearts', 'Strangers', 'Ramblers', 'Foxes', 'Echoes', 'Sparrows', 'Outlaws', 'Mirrors', 'Kings'],
  djs: ['Nova', 'Spinz', 'Kat', 'Rico', 'Luna', 'Blaze', 'Echo', 'Marlo', 'Jules', 'Tempo', 'Señorita', 'Mo'],
};

export interface GroupDef {
  slug: string;
  name: string;
  /** Only cities with at least this many bars get the group. */
  minBars: number;
  /** near: within 1.5 km of the centre, nearest first; crawl: pubs (primary category) nearest the centre;
   *  late: open past 2 a.m. after Saturday; gems: well rated but little known; categories: any of the listed slugs. */
  rule: 'near' | 'crawl' | 'late' | 'gems' | 'categories';
  categories?: string[];
  /** At most this many bars. */
  size: number;
}

export const groups: GroupDef[] = [
  { slug: 'downtown', name: 'Downtown', minBars: 20, rule: 'near', size: 200 },
  { slug: 'pub-crawl', name: 'Pub Crawl', minBars: 20, rule: 'crawl', categories: ['pub', 'irish-pub', 'dive-bar', 'sports-bar'], size: 12 },
  { slug: 'late-night', name: 'Late Night', minBars: 40, rule: 'late', size: 150 },
  { slug: 'craft-beer-trail', name: 'Craft Beer Trail', minBars: 40, rule: 'categories', categories: ['brewery', 'taproom', 'beer-garden'], size: 150 },
  { slug: 'game-day', name: 'Game Day', minBars: 40, rule: 'categories', categories: ['sports-bar'], size: 150 },
  { slug: 'rooftops', name: 'Rooftops', minBars: 80, rule: 'categories', categories: ['rooftop-bar', 'hotel-bar'], size: 150 },
  { slug: 'live-music', name: 'Live Music', minBars: 80, rule: 'categories', categories: ['live-music-venue', 'jazz-bar', 'piano-bar'], size: 150 },
  { slug: 'cocktail-trail', name: 'Cocktail Trail', minBars: 80, rule: 'categories', categories: ['cocktail-bar', 'speakeasy', 'whiskey-bar'], size: 150 },
  { slug: 'hidden-gems', name: 'Hidden Gems', minBars: 80, rule: 'gems', size: 150 },
];
