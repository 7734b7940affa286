// Package endpoint points discordgo at a Discord other than discord.com: the loopback
// fake in tests (fakediscord.Use), or [discord] api_url in agentd's config. discordgo
// has no base-URL option, only package-level strings, so this is process-wide.
package endpoint

import (
	"strings"

	"github.com/bwmarrin/discordgo"
)

// discordgo builds every URL from package-level strings computed once at init
// (EndpointAPI = EndpointDiscord + "api/v9/", EndpointChannels = EndpointAPI + "channels/",
// …). Its Endpoint* functions read those strings when called, so reassigning the strings is
// enough; reassigning EndpointDiscord alone changes nothing.
func endpointVars() map[*string]string {
	return map[*string]string{
		&discordgo.EndpointStatus:             "status/",
		&discordgo.EndpointSm:                 "status/scheduled-maintenances/",
		&discordgo.EndpointSmActive:           "status/scheduled-maintenances/active.json",
		&discordgo.EndpointSmUpcoming:         "status/scheduled-maintenances/upcoming.json",
		&discordgo.EndpointDiscord:            "",
		&discordgo.EndpointAPI:                "api/v{v}/",
		&discordgo.EndpointGuilds:             "api/v{v}/guilds/",
		&discordgo.EndpointChannels:           "api/v{v}/channels/",
		&discordgo.EndpointUsers:              "api/v{v}/users/",
		&discordgo.EndpointGateway:            "api/v{v}/gateway",
		&discordgo.EndpointGatewayBot:         "api/v{v}/gateway/bot",
		&discordgo.EndpointWebhooks:           "api/v{v}/webhooks/",
		&discordgo.EndpointStickers:           "api/v{v}/stickers/",
		&discordgo.EndpointStageInstances:     "api/v{v}/stage-instances",
		&discordgo.EndpointSKUs:               "api/v{v}/skus",
		&discordgo.EndpointVoice:              "api/v{v}//voice/",
		&discordgo.EndpointVoiceRegions:       "api/v{v}//voice/regions",
		&discordgo.EndpointNitroStickersPacks: "api/v{v}//sticker-packs",
		&discordgo.EndpointGuildCreate:        "api/v{v}/guilds",
		&discordgo.EndpointApplications:       "api/v{v}/applications",
		&discordgo.EndpointOAuth2:             "api/v{v}/oauth2/",
		&discordgo.EndpointOAuth2Applications: "api/v{v}/oauth2/applications",
		&discordgo.EndpointOauth2:             "api/v{v}/oauth2/",
		&discordgo.EndpointOauth2Applications: "api/v{v}/oauth2/applications",
		&discordgo.EndpointCDN:                "cdn/",
		&discordgo.EndpointCDNAttachments:     "cdn/attachments/",
		&discordgo.EndpointCDNAvatars:         "cdn/avatars/",
		&discordgo.EndpointCDNIcons:           "cdn/icons/",
		&discordgo.EndpointCDNSplashes:        "cdn/splashes/",
		&discordgo.EndpointCDNChannelIcons:    "cdn/channel-icons/",
		&discordgo.EndpointCDNBanners:         "cdn/banners/",
		&discordgo.EndpointCDNGuilds:          "cdn/guilds/",
		&discordgo.EndpointCDNRoleIcons:       "cdn/role-icons/",
	}
}

// Point points every discordgo endpoint string at base (e.g. "http://127.0.0.1:PORT/",
// the trailing slash optional), keeping discordgo.APIVersion, and returns a function that
// restores the previous values. The strings are process-wide: sessions made while they point
// somewhere talk to it, so tests doing this must not run in parallel with each other.
func Point(base string) (restore func()) {
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	vars := endpointVars()
	saved := make(map[*string]string, len(vars))
	for p, suffix := range vars {
		saved[p] = *p
		*p = base + strings.ReplaceAll(suffix, "{v}", discordgo.APIVersion)
	}
	return func() {
		for p, v := range saved {
			*p = v
		}
	}
}
