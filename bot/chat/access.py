"""Who may search what, and where: the collections file's ``channels:`` section applied to a place.

The rules, closed by default once a ``channels:`` section exists:

- no ``channels:`` section: every place may search every collection (a single-team setup);
- a place listed in ``channels:`` gets its own entry;
- any other place (an unlisted channel, a new private channel, a direct message) gets the ``"*"``
  entry if there is one, and is **denied** if there is none;
- no place at all (the terminal, an evaluation run: the operator, who has the files) may search
  every collection.

``retrieval/`` only parses the section; the decision lives here, in the chat layer.
"""

from dataclasses import dataclass

from graph import CollectionAccessError
from retrieval.collections import ANY_CHANNEL, ChannelPolicy, CollectionsConfig


class PlaceDeniedError(CollectionAccessError):
    """This place may not use Confer at all; ``places`` are the listed ones where it may."""

    def __init__(self, *, places: tuple[str, ...]) -> None:
        self.places = places
        super().__init__(unknown=(), forbidden=(), allowed=())


@dataclass(frozen=True)
class EffectivePolicy:
    """One line of ``confer collections``' policy: a place, what it may search, what by default."""

    place: str
    allow: tuple[str, ...]
    default: tuple[str, ...]


def policy_for(config: CollectionsConfig, place: str | None) -> ChannelPolicy | None:
    """The place's policy, or ``None`` when the place may not use Confer."""
    everything = ChannelPolicy(allow=config.names)
    if place is None or not config.channels:
        return everything
    if place in config.channels:
        return config.channels[place]
    return config.channels.get(ANY_CHANNEL)


def require_policy(config: CollectionsConfig, place: str | None) -> ChannelPolicy:
    """The place's policy; raises ``PlaceDeniedError`` when it may not use Confer."""
    policy = policy_for(config, place)
    if policy is None:
        raise PlaceDeniedError(places=listed_places(config))
    return policy


def allowed_collections(config: CollectionsConfig, place: str | None) -> tuple[str, ...]:
    """What the place may search; nothing where Confer may not be used."""
    policy = policy_for(config, place)
    return () if policy is None else policy.allow


def listed_places(config: CollectionsConfig) -> tuple[str, ...]:
    """The places named in ``channels:`` (not ``"*"``) that may search at least one collection."""
    return tuple(place for place, policy in config.channels.items() if place != ANY_CHANNEL and policy.allow)


def effective_policy(config: CollectionsConfig) -> list[EffectivePolicy]:
    """Every rule as it applies, ending with the one for every other place (``"*"``): with a
    ``channels:`` section and no ``"*"``, every other place gets nothing."""
    if not config.channels:
        return [EffectivePolicy(place=ANY_CHANNEL, allow=config.names, default=())]
    rules = [
        EffectivePolicy(place=place, allow=policy.allow, default=policy.default)
        for place, policy in config.channels.items()
        if place != ANY_CHANNEL
    ]
    other = config.channels.get(ANY_CHANNEL)
    rules.append(
        EffectivePolicy(
            place=ANY_CHANNEL,
            allow=() if other is None else other.allow,
            default=() if other is None else other.default,
        )
    )
    return rules
