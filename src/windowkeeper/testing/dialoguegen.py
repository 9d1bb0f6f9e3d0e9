"""Deterministic generator of long multi-session chats between two people who both state facts.

LongMemEval is a user talking to an assistant, and the agent sessions are an agent talking to its tools; neither
has two people who each tell the other about their lives over weeks: names, dates, plans, prices, and changes of
mind ("actually, we're going with the blue one"). Such a chat is the hard case for a context manager: turns are
short (a fact often sits in a ten-word reply to a question), both speakers matter equally, and the same topic comes
up again and again without the fact that answers a question about it.

The first speaker is the ``user`` role and the second the ``assistant`` role, strictly alternating (every session
starts with the first speaker), so the chat is a valid provider conversation; every message of a session carries
``metadata["session_date"]`` and its speaker's name in ``metadata["name"]`` (where the Chat Completions and
LangChain readers keep a participant's ``name``, and the Chat writer sends it back). Each `PlantedFact` is stated
exactly once (its ``answer`` occurs in one message only, checked case-insensitively against the whole chat), and its
`question` names the topic, never the answer. A plan
that changes later is planted twice: the first value stays in the chat as a distractor and the question asks for
the final one.

Everything is derived from the seed through one `random.Random`, so the same arguments give the same chat.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Literal

from ..errors import ConfigurationError
from ..messages import Message

if TYPE_CHECKING:
    from ..tokens import TokenCounter

FactKind = Literal["fact", "date", "plan", "change"]

DEFAULT_TARGET_TOKENS = 60_000
TOKENS_PER_TURN = 18
"""About what a turn of these chats costs (text plus framing): the facts are spread over the expected length."""
FIRST_DAY = datetime(2024, 1, 8, 18, 0)

# fmt: off
_FIRST = (
    "Maya", "Tomas", "Priya", "Jonah", "Leila", "Marco", "Ines", "Kenji", "Sofia", "Dev", "Hana", "Olu", "Greta",
    "Rafael", "Noor", "Elliot", "Yara", "Bastien", "Chiara", "Amir", "Freya", "Luca", "Zainab", "Oskar", "Imani",
    "Niall", "Signe", "Tariq", "Beatriz", "Callum", "Mei", "Anders", "Lucia", "Kwame", "Elodie", "Ravi",
)
_SURNAMES = (
    "Okafor", "Lindqvist", "Moreau", "Tanaka", "Castillo", "Brennan", "Haddad", "Novak", "Ferreira", "Whitlock",
    "Ivanova", "Mbeki", "Sorensen", "Delacroix", "Quintero", "Abernathy", "Kowalski", "Nakamura", "Pellegrini",
    "Ashworth", "Varga", "Oyelaran", "Hollis", "Marchetti", "Stroud", "Eriksen", "Valdez", "Thornbury",
)
_CITIES = (
    "Lisbon", "Porto", "Valencia", "Kraków", "Ljubljana", "Tallinn", "Bergen", "Ghent", "Lyon", "Bologna",
    "Edinburgh", "Galway", "Montreal", "Halifax", "Oaxaca", "Kyoto", "Hoi An", "Tbilisi", "Marrakesh", "Seville",
    "Trieste", "Bruges", "Salzburg", "Cork", "Victoria", "Asheville", "Tucson", "Savannah",
)
_RELATIVE_NAMES = (
    "Agnieszka", "Bartholomew", "Cosima", "Dariusz", "Eulalia", "Florentin", "Gwendolyn", "Horatio",
)
_PET_NAMES = (
    "Biscuit", "Pepper", "Juniper", "Mochi", "Ziggy", "Clementine", "Noodle", "Basil", "Pickles", "Waffles",
    "Marzipan", "Turnip", "Figaro", "Pistachio", "Dumpling", "Sprocket", "Bramble", "Tofu", "Gnocchi", "Pretzel",
)
_PETS = (
    "kitten", "puppy", "rabbit", "rescue dog", "tabby cat", "guinea pig",
)
_COLOURS = (
    "sage green", "terracotta", "dusty blue", "mustard yellow", "charcoal grey", "warm white", "deep teal", "olive",
    "blush pink", "navy", "burnt orange", "lavender", "forest green", "sand beige",
)
_ADJ = (
    "Salt", "Quiet", "Paper", "Copper", "Lantern", "Hollow", "Winter", "Amber", "Glass", "Borrowed", "Last",
)
_NOUN = (
    "Orchard", "Harbour", "Cartographer", "Garden", "Lighthouse", "Season", "River", "Archive", "Kingdom",
)
_SECTORS = (
    "Logistics", "Analytics", "Design Studio", "Robotics", "Health", "Foods", "Architects", "Media",
)
_RESTAURANTS = (
    "Osteria", "Bistro", "Taverna", "Brasserie", "Kitchen", "Cantina", "Izakaya", "Trattoria",
)
_CARS = (
    "Corolla", "Golf", "Model 3", "Civic", "Outback", "Ioniq 5", "Mazda 3", "Octavia", "Leaf", "Niro",
)
_LANGUAGES = (
    "Portuguese", "Japanese", "Italian", "Korean", "Dutch", "Greek", "Turkish", "Swahili", "Polish",
)
_CLASSES = (
    "spin", "yoga", "pilates", "boxing", "climbing", "rowing", "barre", "swimming",
)
_INGREDIENTS = (
    "smoked paprika", "a square of dark chocolate", "fish sauce", "cinnamon", "miso", "espresso",
)
_ALLERGENS = (
    "cashews", "shellfish", "kiwi", "sesame", "penicillin", "birch pollen", "latex",
)
_RELATIVES = (
    "sister", "brother", "cousin", "aunt", "uncle", "niece", "nephew",
)
_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
    "December",
)
_WEEKDAYS = (
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
)
# fmt: on

_SMALL_TALK = (
    "Ugh, what a day. {weather} all afternoon.",
    "Did you end up watching the {show} finale?",
    "Work was fine, mostly meetings. You?",
    "I made {dish} tonight, it came out better than last time.",
    "Honestly I just need a quiet weekend.",
    "The {weather_low} weather is getting to me a bit.",
    "Haha yes, exactly that.",
    "Oh no, that sounds stressful.",
    "Same here, I barely slept.",
    "I walked past that new bakery on {street} again, the queue was around the block.",
    "Have you talked to {friend} lately? I haven't heard from them in ages.",
    "My train was late again, twenty minutes this time.",
    "I keep meaning to call my mum back.",
    "That reminds me, I still owe you for the coffee.",
    "Not much, just tidying up and doing laundry.",
    "It's been one of those weeks where nothing quite works.",
    "I finally finished that puzzle, the last hundred pieces were all sky.",
    "We should do a picnic if it ever warms up.",
    "I'm trying to cut back on screens before bed, it's going badly.",
    "Did I tell you the neighbours got a drum kit? Every evening now.",
    "I tried the {dish} place you mentioned, it was decent.",
    "Long story, I'll tell you properly next time.",
    "Fair enough, no rush on that.",
    "Right? I thought the same.",
    "I'm so behind on emails it's not even funny.",
    "Ha, classic {friend}.",
    "How was the rest of your week?",
    "Sounds lovely, honestly.",
    "Good luck with it, keep me posted!",
    "I'm knackered, going to bed early tonight.",
)
_OPENERS = (
    "Anyway,",
    "Oh, also:",
    "Random thought:",
    "Not much news here.",
    "Quick update:",
    "Honestly,",
    "So,",
    "Small thing, but",
    "You'll laugh:",
    "Meanwhile,",
)
_DETAILS = (
    "the {dish} I made was too salty.",
    "I fell asleep on the sofa at nine.",
    "{friend} sent me a voice note.",
    "the bus driver waved at me, which made my day.",
    "I found my old {show} DVDs.",
    "the heating broke again.",
    "my phone screen cracked.",
    "I've been walking to work, it's nice.",
    "{weather} on my way home.",
    "I reorganised the whole spice drawer.",
    "the cat next door keeps visiting.",
    "work sent us on a training day.",
    "I'm rereading an old favourite.",
    "I burnt the toast twice.",
    "the shop on {street} closed down.",
)
_WEATHER = ("It poured", "It was grey and drizzly", "It was weirdly warm", "The wind was brutal", "It snowed")
_WEATHER_LOW = ("rainy", "cold", "muggy", "gloomy", "windy")
_SHOWS = ("baking", "detective", "space", "island dating", "cooking", "courtroom")
_DISHES = ("ramen", "a lentil curry", "shakshuka", "dumplings", "a risotto", "tacos", "pad thai", "a stew")
_STREETS = ("Elm Street", "the high street", "Canal Road", "Market Lane", "Station Road")


@dataclass(frozen=True)
class PlantedFact:
    """A fact stated once: ``answer`` occurs (case-insensitively) in exactly one message, ``message_id``."""

    topic: str
    kind: FactKind
    answer: str
    question: str
    message_id: str
    speaker: str
    statement: str
    superseded: str | None = None
    """For a changed plan, the first value (still in the chat, never the answer)."""


@dataclass
class Dialogue:
    """A generated two-person chat and the facts planted in it."""

    messages: list[Message]
    facts: list[PlantedFact]
    speakers: tuple[str, str]
    seed: int
    sessions: int

    def fact_by_topic(self, topic: str) -> PlantedFact:
        for fact in self.facts:
            if fact.topic == topic:
                return fact
        raise KeyError(f"no planted fact on topic {topic!r}")


@dataclass
class _Slot:
    """One kind of fact: how its value is drawn, stated, asked about, and (for a plan) changed."""

    topic: str
    kind: FactKind
    value: Callable[[random.Random], str]
    statements: tuple[str, ...]
    question: str
    prompt: tuple[str, ...] = ()
    """What the other person asks first; the answer turn is then a short reply."""
    replies: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()
    mentions: tuple[str, ...] = ()
    """Later turns on the same topic that do not state the value (they share the question's words)."""


def _date(rng: random.Random) -> str:
    return f"{rng.choice(_MONTHS)} {rng.randint(1, 28)}"


def _time(rng: random.Random) -> str:
    return f"{rng.randint(7, 11)}:{rng.choice(('05', '10', '20', '35', '40', '50'))} {rng.choice(('am', 'pm'))}"


def _price(rng: random.Random) -> str:
    return f"${rng.randint(11, 49)}{rng.randint(0, 9)}"


def _person(rng: random.Random) -> str:
    return f"{rng.choice(_FIRST)} {rng.choice(_SURNAMES)}"


def _title(rng: random.Random) -> str:
    return f"The {rng.choice(_ADJ)} {rng.choice(_NOUN)}"


_SLOTS: tuple[_Slot, ...] = (
    _Slot(
        "pet",
        "fact",
        lambda r: r.choice(_PET_NAMES),
        (
            "We adopted a {pet} on Saturday! We called her {value}.",
            "Meet the new {pet}: {value}. Already chewed a shoe.",
        ),
        "What is the name of the {pet} {owner} adopted?",
        ("Wait, did you name the {pet} yet?",),
        ("Yes! {value}.", "We went with {value} in the end."),
        mentions=("The {pet} knocked a plant off the windowsill again.", "Vet visit for the {pet} went fine."),
    ),
    _Slot(
        "flight",
        "date",
        _date,
        ("My flight to {city} is booked, I leave on {value}.", "Booked it: {city}, departing {value}."),
        "On what date is {poss} flight to {city}?",
        ("When do you fly out to {city}?",),
        ("{value}, early morning.", "On {value}."),
        mentions=("Still need to sort a plug adapter for {city}.", "Any tips for {city}? I've never been."),
    ),
    _Slot(
        "dentist",
        "date",
        _time,
        ("The dentist moved my appointment to {value} on {weekday}.", "Dentist is at {value} on {weekday}, ugh."),
        "What time is {poss} dentist appointment on {weekday}?",
        ("What time's the dentist on {weekday}?",),
        ("{value}.", "{value}, I'll have to leave work early."),
        mentions=("Dreading the dentist, honestly.", "I should floss more before the dentist, ha."),
    ),
    _Slot(
        "paint",
        "plan",
        lambda r: r.choice(_COLOURS),
        ("We're repainting the kitchen, thinking {value}.", "Kitchen walls are going to be {value}."),
        "What colour did {owner} finally choose for the kitchen?",
        ("Did you pick a colour for the kitchen?",),
        ("{value}, I think.",),
        ("Change of plan on the kitchen: we're going with {value} instead.", "Scrap that colour, it's {value} now."),
        ("Still haven't bought brushes for the kitchen.", "The kitchen is a mess of paint samples."),
    ),
    _Slot(
        "job",
        "fact",
        lambda r: f"{r.choice(_SURNAMES)} {r.choice(_SECTORS)}",
        ("I accepted the offer from {value}!", "Signed the contract today, I'm joining {value}."),
        "Which company did {owner} accept a job offer from?",
        ("So which offer did you take in the end?",),
        ("{value}.", "The one from {value}."),
        mentions=("First week at the new job is a blur.", "New job has a much nicer office at least."),
    ),
    _Slot(
        "relative",
        "fact",
        lambda r: r.choice(_RELATIVE_NAMES),
        ("My {relative} {value} is staying with us next week.", "{value}, my {relative}, is coming to visit."),
        "What is the name of {poss} {relative} who is coming to stay?",
        ("Who's the {relative} that's visiting?",),
        ("{value}, the one who lives abroad.",),
        mentions=("My {relative} is arriving soon, need to clean.", "Having family over always wipes me out."),
    ),
    _Slot(
        "sofa",
        "fact",
        _price,
        ("We finally bought the sofa, {value} with delivery.", "The sofa came to {value} in the end."),
        "How much did {owner} pay for the sofa?",
        ("How much was the sofa in the end?",),
        ("{value}, delivery included.",),
        mentions=("The sofa is so comfy, worth it.", "Still not sure the sofa fits the room."),
    ),
    _Slot(
        "book",
        "fact",
        _title,
        ("Book club picked {value} for this month.", "We're reading {value} for book club."),
        "Which book is {poss} book club reading?",
        ("What's book club reading?",),
        ("{value}.", "Something called {value}."),
        mentions=("I'm only halfway through the book club book.", "Book club got cancelled, rescheduled."),
    ),
    _Slot(
        "race",
        "fact",
        lambda r: f"{r.randint(41, 68)}:{r.randint(10, 59)}",
        ("I ran the 10k on Sunday, finished in {value}!", "10k done, my time was {value}."),
        "What was {poss} finishing time in the 10k?",
        ("How did the 10k go? What was your time?",),
        ("{value}, a personal best!",),
        mentions=("My legs still hurt from the race.", "Thinking about a half marathon next."),
    ),
    _Slot(
        "restaurant",
        "plan",
        lambda r: f"{r.choice(_RESTAURANTS)} {r.choice(_SURNAMES)}",
        ("For our anniversary I booked {value}.", "Anniversary dinner is at {value}."),
        "Where did {owner} book the anniversary dinner in the end?",
        ("Where are you going for the anniversary?",),
        ("{value}.",),
        ("Switched the anniversary booking to {value}, the first place closed.", "We moved it to {value} now."),
        ("Need to find a gift for the anniversary still.", "The anniversary snuck up on me this year."),
    ),
    _Slot(
        "move",
        "plan",
        lambda r: r.choice(_CITIES[len(_CITIES) // 2 :]),
        ("We've decided: we're moving to {value} in {month}.", "Big news, we're relocating to {value} in {month}."),
        "Which city did {owner} decide to move to?",
        ("So where are you moving?",),
        ("{value}, in {month}.",),
        ("Plot twist on the move: it's {value} now, not the first city.", "We changed our minds, moving to {value}."),
        ("Packing boxes everywhere for the move.", "The move is stressing me out."),
    ),
    _Slot(
        "car",
        "plan",
        lambda r: r.choice(_CARS),
        ("I think I'm getting a used {value}.", "Test drove a {value} today, probably buying it."),
        "Which car model did {owner} decide to buy?",
        ("Did you decide on a car?",),
        ("Probably the {value}.",),
        ("Forget that car, I'm buying a {value} instead.", "Changed my mind, going for the {value}."),
        ("Car shopping is exhausting.", "The dealership keeps calling me about the car."),
    ),
    _Slot(
        "allergy",
        "fact",
        lambda r: r.choice(_ALLERGENS),
        ("Allergy test came back, I'm allergic to {value}.", "Turns out I react to {value}, who knew."),
        "What did {poss} allergy test show?",
        ("Did the allergy results come back?",),
        ("Yes, it's {value}.",),
        mentions=("Reading every food label now because of the allergy.",),
    ),
    _Slot(
        "teacher",
        "fact",
        lambda r: f"Ms {r.choice(_SURNAMES)}",
        ("The kids' new teacher is {value}, she seems great.", "Our son's teacher this year is {value}."),
        "What is the name of {poss} kids' new teacher?",
        ("Who's the new teacher?",),
        ("{value}.",),
        mentions=("Parents' evening at school next week.", "The kids like their new class."),
    ),
    _Slot(
        "deadline",
        "date",
        _date,
        ("The {project} deadline is {value}.", "We have to ship the {project} by {value}."),
        "What is the current deadline for the {project}?",
        ("When's the {project} due?",),
        ("{value}.",),
        ("They pushed the {project} again, now it's due {value}.", "New date for the {project}: {value}."),
        ("The {project} is eating all my evenings.", "Another {project} meeting, ugh."),
    ),
    _Slot(
        "gym",
        "plan",
        lambda r: f"{r.choice(_WEEKDAYS)} {r.choice(_CLASSES)}",
        ("I signed up for the {value} class at the gym.", "Gym plan: the {value} class every week."),
        "Which gym class did {owner} end up going to?",
        ("Which class are you doing at the gym?",),
        ("The {value} one.",),
        ("I switched gym classes, it's the {value} class now.", "Moved to the {value} class, better timing."),
        ("So sore after the gym.", "Skipped the gym this week, oops."),
    ),
    _Slot(
        "recipe",
        "fact",
        lambda r: r.choice(_INGREDIENTS),
        ("The secret in my chili is {value}, don't tell anyone.", "Chili tip: I add {value}."),
        "What is the secret ingredient in {poss} chili?",
        ("What's in your chili that makes it so good?",),
        ("{value}!",),
        mentions=("Making a big pot of chili this weekend.",),
    ),
    _Slot(
        "course",
        "plan",
        lambda r: r.choice(_LANGUAGES),
        ("I'm starting a {value} course in the evenings.", "Enrolled in a {value} class, starts next month."),
        "Which language course did {owner} end up taking?",
        ("What language are you learning again?",),
        ("{value}.",),
        ("Actually I've dropped that course for {value}.", "Switching languages, it's {value} now."),
        ("Language homework is piling up.", "Lesson was hard tonight."),
    ),
    _Slot(
        "birthday",
        "date",
        _date,
        ("{friend}'s birthday is on {value}, we should plan something.", "Don't forget, {friend} turns 40 on {value}."),
        "When is {friend}'s birthday?",
        ("When's {friend}'s birthday again?",),
        ("{value}.",),
        mentions=("Any ideas for {friend}'s present?", "{friend} said no fuss for the birthday, as if."),
    ),
    _Slot(
        "concert",
        "fact",
        lambda r: f"{r.choice(_ADJ)} {r.choice(('Foxes', 'Parade', 'Engines', 'Sisters', 'Harbours', 'Static'))}",
        ("Got tickets to see {value} in {month}!", "We're going to the {value} gig in {month}."),
        "Which band did {owner} get tickets to see in {month}?",
        ("Who are you seeing in {month}?",),
        ("{value}!",),
        mentions=("Can't wait for the concert.", "Need to figure out trains for the gig."),
    ),
)


def _fill(template: str, values: dict[str, str]) -> str:
    return template.format(**values)


class _Writer:
    def __init__(self, seed: int, expected_turns: int) -> None:
        self.rng = random.Random(f"windowkeeper-dialogue:{seed}")
        self.seed = seed
        first, second = self.rng.sample(_FIRST, 2)
        self.speakers = (first, second)
        self.messages: list[Message] = []
        self.facts: list[PlantedFact] = []
        self.day = FIRST_DAY + timedelta(days=self.rng.randrange(0, 200))
        self.session = -1
        self.turn = 0
        self.turn_in_session = 0
        self.used: set[str] = set()
        self.pending: list[tuple[int, _Slot, dict[str, str], int]] = []  # (due turn, slot, values, owner)
        self.live: list[tuple[_Slot, dict[str, str], int]] = []  # topics planted, for later mentions
        self.slots = list(_SLOTS)
        self.rng.shuffle(self.slots)
        self.friends = [f for f in _FIRST if f not in self.speakers]
        # facts are planted at random turns over the whole expected length, not bunched at the start
        self.plant_turns = sorted(self.rng.sample(range(2, max(expected_turns, len(_SLOTS) + 3)), len(_SLOTS)))

    # -- values ------------------------------------------------------------------------------------------------

    def _fresh(self, slot: _Slot) -> str:
        """A value not used in this chat yet and not found in the recent text."""
        for _ in range(200):
            value = slot.value(self.rng)
            key = value.casefold()
            if key not in self.used and all(key not in m.text().casefold() for m in self.messages[-400:]):
                self.used.add(key)
                return value
        raise ConfigurationError(f"could not draw a fresh value for {slot.topic!r}")

    def _context(self) -> dict[str, str]:
        """The words around a value (where the flight goes, which relative): part of the question, not the answer."""
        rng = self.rng
        return {
            "pet": rng.choice(_PETS),
            "city": rng.choice(_CITIES[: len(_CITIES) // 2]),
            "weekday": rng.choice(_WEEKDAYS),
            "relative": rng.choice(_RELATIVES),
            "month": rng.choice(_MONTHS),
            "project": f"{rng.choice(_ADJ)} {rng.choice(('launch', 'audit', 'migration', 'report'))}",
            "friend": rng.choice(self.friends),
        }

    # -- writing ------------------------------------------------------------------------------------------------

    def _emit(self, speaker: int, text: str) -> Message:
        role: Literal["user", "assistant"] = "user" if speaker == 0 else "assistant"
        stamp = self.day + timedelta(minutes=2 * self.turn_in_session)
        msg = Message.text_message(text, role=role, message_id=f"d{self.seed}:s{self.session}:t{self.turn_in_session}")
        msg.metadata["session_date"] = stamp.strftime("%Y/%m/%d (%a) %H:%M")
        msg.metadata["name"] = self.speakers[speaker]  # as a Chat Completions caller names each participant
        self.messages.append(msg)
        self.turn += 1
        self.turn_in_session += 1
        return msg

    def _small_talk(self) -> str:
        rng = self.rng
        template = rng.choice(_SMALL_TALK) if rng.random() < 0.6 else f"{rng.choice(_OPENERS)} {rng.choice(_DETAILS)}"
        return template.format(
            weather=rng.choice(_WEATHER),
            weather_low=rng.choice(_WEATHER_LOW),
            show=rng.choice(_SHOWS),
            dish=rng.choice(_DISHES),
            street=rng.choice(_STREETS),
            friend=rng.choice(self.friends),
        )

    def _plant(self, owner: int, slot: _Slot, values: dict[str, str], *, change: bool) -> list[_Line]:
        """The turns that state a fresh value: one statement, or the other person's question and a short reply."""
        rng = self.rng
        value = self._fresh(slot)
        filled = {**values, "value": value}
        if change:
            return [(owner, _fill(rng.choice(slot.changes), filled), value)]
        if slot.prompt and rng.random() < 0.45:
            asked = _fill(rng.choice(slot.prompt), filled)
            return [(1 - owner, asked, None), (owner, _fill(rng.choice(slot.replies), filled), value)]
        return [(owner, _fill(rng.choice(slot.statements), filled), value)]

    def _question(self, slot: _Slot, values: dict[str, str], owner: int) -> str:
        """The question asked at the end, naming whose fact it is (by name, so either speaker's facts count)."""
        name = self.speakers[owner]
        return _fill(slot.question, {**values, "owner": name, "poss": f"{name}'s"})

    def _record(self, slot: _Slot, values: dict[str, str], owner: int, msg: Message, value: str) -> None:
        text = msg.text()
        at = text.casefold().index(value.casefold())
        earlier = next((f for f in self.facts if f.topic == slot.topic), None)
        fact = PlantedFact(
            topic=slot.topic,
            kind="change" if earlier is not None else slot.kind,
            answer=text[at : at + len(value)],
            question=self._question(slot, values, owner),
            message_id=str(msg.message_id),
            speaker=self.speakers[owner],
            statement=text,
            superseded=earlier.answer if earlier is not None else None,
        )
        if earlier is not None:
            self.facts.remove(earlier)
        self.facts.append(fact)

    def session_of(self, turns: int) -> None:
        """Write one session of about ``turns`` turns: small talk, the facts due now, changes, mentions."""
        rng = self.rng
        self.session += 1
        self.turn_in_session = 0
        self.day += timedelta(days=rng.randint(1, 5), minutes=rng.randint(-180, 180))
        script: list[tuple[_Line, tuple[_Slot, dict[str, str], int] | None]] = []
        while len(script) < turns:
            now = self.turn + len(script)
            if self.plant_turns and now >= self.plant_turns[0] and self.slots:
                self.plant_turns.pop(0)
                slot = self.slots.pop()
                owner = rng.randrange(2)
                values = self._context()
                script.extend((line, (slot, values, owner)) for line in self._plant(owner, slot, values, change=False))
                self.live.append((slot, values, owner))
                if slot.changes and rng.random() < 0.6:
                    self.pending.append((now + rng.randint(40, 600), slot, values, owner))
                continue
            due = [p for p in self.pending if p[0] <= now]
            if due:
                self.pending.remove(due[0])
                _, slot, values, owner = due[0]
                script.extend((line, (slot, values, owner)) for line in self._plant(owner, slot, values, change=True))
                continue
            if self.live and rng.random() < 0.1:
                slot, values, _owner = rng.choice(self.live)
                if slot.mentions:
                    script.append(((rng.randrange(2), _fill(rng.choice(slot.mentions), values), None), None))
                    continue
            script.append(((-1, self._small_talk(), None), None))
        # lay the script onto strictly alternating speakers: a line meant for the other speaker gets a small-talk
        # turn before it, so who says what is kept
        speaker = 0
        for (who, text, value), planted in script:
            if who not in (-1, speaker):
                self._emit(speaker, self._small_talk())
                speaker = 1 - speaker
            msg = self._emit(speaker, text)
            if planted is not None and value is not None:
                self._record(*planted, msg, value)
            speaker = 1 - speaker
        if speaker == 1:
            self._emit(1, self._small_talk())


_Line = tuple[int, str, str | None]
"""(speaker, text, the value it states); speaker -1 is whoever's turn it is."""


def generate_dialogue(
    target_tokens: int = DEFAULT_TARGET_TOKENS, *, seed: int = 0, counter: TokenCounter | None = None
) -> Dialogue:
    """A chat of at least ``target_tokens`` tokens (``counter``, default the shared o200k counter), in sessions
    of 12-48 short turns.

    Each topic is planted at most once (twice for a changed plan), so a chat holds up to about twenty questions
    with one answer each; past that it keeps going with small talk and mentions of the topics already planted.
    """
    if target_tokens <= 0:
        raise ConfigurationError(f"target_tokens must be positive, got {target_tokens!r}")
    if counter is None:
        from ..tokens import default_counter

        counter = default_counter()
    writer = _Writer(seed, expected_turns=int(target_tokens / TOKENS_PER_TURN))
    total = 0
    counted = 0
    while total < target_tokens:
        writer.session_of(writer.rng.randint(12, 48))
        for message in writer.messages[counted:]:
            total += counter.count_message(message)
        counted = len(writer.messages)
    facts = [f for f in writer.facts if _stated_once(writer.messages, f.answer)]
    return Dialogue(
        messages=writer.messages, facts=facts, speakers=writer.speakers, seed=seed, sessions=writer.session + 1
    )


def _stated_once(messages: list[Message], answer: str) -> bool:
    needle = answer.casefold()
    return sum(needle in m.text().casefold() for m in messages) == 1
